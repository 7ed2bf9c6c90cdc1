const a = process.argv.slice(2), flag = (f) => (a.includes(f) ? a[a.indexOf(f) + 1] : undefined);
require("node:child_process").spawn(process.env.PI_BIN || "pi", ["run", "--rpc", ...(flag("--model") ? ["--model", [flag("--provider"), flag("--model")].filter(Boolean).join("/")] : [])], { stdio: "inherit" }).on("exit", (code, sig) => process.exit(code ?? (sig ? 128 : 1)));
