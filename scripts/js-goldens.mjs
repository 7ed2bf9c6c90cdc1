// Records how JavaScript writes and reads numbers and what it counts as white space, so that
// the unit tests of crates/pi-base/src/js.rs can check the Rust imitations without Node.
//
//   node scripts/js-goldens.mjs        (Node 20 or newer; no packages needed)
//
// Output, under crates/pi-base/tests/fixtures/js/:
//   numbers.jsonl     one double a line: {"bits": IEEE 754 bits as 16 hex digits,
//                     "string": String(n), "json": JSON.stringify(n)}
//   parse.jsonl       one string a line: {"input": s, "bits": bits of Number(s), or null for NaN}
//   whitespace.json   {"trim": [code points that String.prototype.trim removes]}
// The doubles are a fixed list of edge cases plus pseudo-random ones from a fixed seed.

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const out = join(resolve(dirname(fileURLToPath(import.meta.url)), ".."), "crates", "pi-base", "tests", "fixtures", "js");
mkdirSync(out, { recursive: true });

const view = new DataView(new ArrayBuffer(8));
const bitsOf = (n) => {
	view.setFloat64(0, n);
	return view.getBigUint64(0).toString(16).padStart(16, "0");
};
const fromBits = (b) => {
	view.setBigUint64(0, b);
	return view.getFloat64(0);
};

// xorshift64*, fixed seed: the same file on every run.
let state = 0x9e3779b97f4a7c15n;
const mask = (1n << 64n) - 1n;
const next = () => {
	state ^= state >> 12n;
	state ^= (state << 25n) & mask;
	state ^= state >> 27n;
	return (state * 0x2545f4914f6cdd1dn) & mask;
};

const numbers = [
	0, -0, 1, -1, 0.1, -0.1, 0.2, 0.1 + 0.2, 1 / 3, 2 / 3, 10 / 3, 0.5, 1.5, -2.5, 100, 123.456,
	1e-7, 1.5e-7, -2.5e-8, 1e-6, 0.000001, 0.0000001, 0.0000012345, 0.00001, 123e-20, 1e-300,
	1e20, 1e21, 1e22, 1.5e21, 999999999999999900000, 999999999999999999999, 123456789012345680000,
	12345678901234567890, 123456789012, 1e15, 1e16, 1e17, 9e15, 2 ** 31, 2 ** 32, 2 ** 53 - 1,
	2 ** 53, 2 ** 53 + 2, -(2 ** 53), 2 ** 63, 2 ** 64, 2 ** 100, 1.5e300, 1e308,
	Number.MIN_VALUE, -Number.MIN_VALUE, 2.2250738585072014e-308, 2.225073858507201e-308,
	Number.MAX_VALUE, -Number.MAX_VALUE, Number.EPSILON, NaN, Infinity, -Infinity,
	5e-324, 1.7976931348623157e308, 4.35, 0.3, 2.675, 1.005, 9.95, 5e-7, 5e-6, 1234.5678e-10,
	100000000000000000000, 10000000000000000000000, 0.1 * 3, 3.14159, Math.PI, Math.E, -Math.PI,
	1e-5, 1.2e-6, 12e-7, 99e-8, 1e-323, 7e22, 9007199254740993,
];
for (let e = -330; e <= 310; e++) numbers.push(Number(`1e${e}`), Number(`7.25e${e}`));
for (let k = 0; k < 600; k++) numbers.push(fromBits(next()));
for (let k = 0; k < 300; k++) {
	// Short decimals at every scale, the kind people and models write.
	const digits = Number(next() % 100000n);
	const exp = Number(next() % 60n) - 30;
	numbers.push(Number(`${digits}e${exp}`));
}
for (let k = 0; k < 100; k++) numbers.push(Number(next() >> 11n) * (k % 2 ? 1 : -1));

const seen = new Set();
const numberLines = [];
for (const n of numbers) {
	const bits = bitsOf(n);
	if (seen.has(bits)) continue;
	seen.add(bits);
	numberLines.push(JSON.stringify({ bits, string: String(n), json: JSON.stringify(n) }));
}
writeFileSync(join(out, "numbers.jsonl"), numberLines.join("\n") + "\n");

const inputs = [
	"", " ", "\u00a0", "0", "-0", "+0", "3", " 3 ", "\t\n3\u2028", "\ufeff3\u3000", "\u00853",
	"1e2", "1E2", "1e+2", "1e-2", "1e", "1e+", "e2", "5.", ".5", "-.5", "+.5e-3", ".", "-", "+",
	"12e+3", "00012", "0012.50", "1_000", "1,000", "3px", "inf", "infinity", "Infinity",
	"-Infinity", "+Infinity", "INFINITY", "NaN", "0x10", "0X1f", "0x", "-0x10", "+0x10", "0xg",
	"0o17", "0O7", "0o8", "0b11", "0B102", "0b", "0x1fffffffffffff", "0x20000000000001",
	"1e400", "-1e400", "1e-400", "9007199254740993", "0.1", "0.30000000000000004",
	"123456789012345678901234567890", "2.2250738585072011e-308", "4.9406564584124654e-324",
	"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "3 4", "١",
	"true", "null", "0.0000001", "-1.5e-7", "  -12.75  ",
];
const parseLines = inputs.map((input) => {
	const n = Number(input);
	return JSON.stringify({ input, bits: Number.isNaN(n) ? null : bitsOf(n) });
});
writeFileSync(join(out, "parse.jsonl"), parseLines.join("\n") + "\n");

const trim = [];
for (let c = 0; c <= 0x10ffff; c++) {
	if (c >= 0xd800 && c <= 0xdfff) continue;
	if (String.fromCodePoint(c).trim() === "") trim.push(c);
}
writeFileSync(join(out, "whitespace.json"), JSON.stringify({ trim }) + "\n");
console.log(`${numberLines.length} numbers, ${parseLines.length} strings, ${trim.length} white space characters`);
