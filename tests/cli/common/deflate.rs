//! A raw DEFLATE (RFC 1951) decoder: stored, fixed and dynamic Huffman blocks (the
//! generated golden inputs are stored compressed).
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u32,
    cnt: u32,
}

impl Bits<'_> {
    fn need(&mut self, n: u32) -> u32 {
        while self.cnt < n {
            let b = *self.data.get(self.pos).expect("deflate: out of input");
            self.pos += 1;
            self.buf |= u32::from(b) << self.cnt;
            self.cnt += 8;
        }
        let v = self.buf & ((1u32 << n) - 1);
        self.buf >>= n;
        self.cnt -= n;
        v
    }
}

/// Canonical Huffman code: counts per length and symbols in code order.
struct Huffman {
    count: [u16; 16],
    symbol: Vec<u16>,
}

impl Huffman {
    fn new(lengths: &[u8]) -> Huffman {
        let mut count = [0u16; 16];
        for &l in lengths {
            count[l as usize] += 1;
        }
        count[0] = 0;
        let mut offs = [0u16; 16];
        for l in 1..16 {
            offs[l] = offs[l - 1] + count[l - 1];
        }
        let mut symbol = vec![0u16; lengths.len()];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbol[offs[l as usize] as usize] = s as u16;
                offs[l as usize] += 1;
            }
        }
        Huffman { count, symbol }
    }

    fn decode(&self, bits: &mut Bits) -> u16 {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= bits.need(1) as i32;
            let count = i32::from(self.count[len]);
            if code - count < first {
                return self.symbol[(index + (code - first)) as usize];
            }
            index += count;
            first += count;
            first <<= 1;
            code <<= 1;
        }
        panic!("deflate: bad code");
    }
}

const LBASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEXT: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DBASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DEXT: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

fn codes(bits: &mut Bits, out: &mut Vec<u8>, lit: &Huffman, dist: &Huffman) {
    loop {
        let sym = lit.decode(bits) as usize;
        if sym < 256 {
            out.push(sym as u8);
        } else if sym == 256 {
            return;
        } else {
            let s = sym - 257;
            let len = LBASE[s] as usize + bits.need(u32::from(LEXT[s])) as usize;
            let d = dist.decode(bits) as usize;
            let back = DBASE[d] as usize + bits.need(u32::from(DEXT[d])) as usize;
            let start = out.len() - back;
            for k in 0..len {
                out.push(out[start + k]);
            }
        }
    }
}

pub fn inflate(data: &[u8]) -> Vec<u8> {
    let mut bits = Bits {
        data,
        pos: 0,
        buf: 0,
        cnt: 0,
    };
    let mut out = Vec::new();
    loop {
        let last = bits.need(1);
        match bits.need(2) {
            0 => {
                bits.buf = 0;
                bits.cnt = 0;
                let p = bits.pos;
                let len = u16::from_le_bytes([data[p], data[p + 1]]) as usize;
                out.extend_from_slice(&data[p + 4..p + 4 + len]);
                bits.pos = p + 4 + len;
            }
            1 => {
                let mut l = [0u8; 288];
                for (i, x) in l.iter_mut().enumerate() {
                    *x = match i {
                        0..=143 => 8,
                        144..=255 => 9,
                        256..=279 => 7,
                        _ => 8,
                    };
                }
                let lit = Huffman::new(&l);
                let dist = Huffman::new(&[5u8; 30]);
                codes(&mut bits, &mut out, &lit, &dist);
            }
            2 => {
                let nlen = bits.need(5) as usize + 257;
                let ndist = bits.need(5) as usize + 1;
                let ncode = bits.need(4) as usize + 4;
                const ORDER: [usize; 19] = [
                    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
                ];
                let mut cl = [0u8; 19];
                for &o in ORDER.iter().take(ncode) {
                    cl[o] = bits.need(3) as u8;
                }
                let clh = Huffman::new(&cl);
                let mut lengths = vec![0u8; nlen + ndist];
                let mut i = 0;
                while i < nlen + ndist {
                    let sym = clh.decode(&mut bits);
                    let (val, rep) = match sym {
                        0..=15 => (sym as u8, 1),
                        16 => (lengths[i - 1], 3 + bits.need(2) as usize),
                        17 => (0, 3 + bits.need(3) as usize),
                        _ => (0, 11 + bits.need(7) as usize),
                    };
                    for _ in 0..rep {
                        lengths[i] = val;
                        i += 1;
                    }
                }
                let lit = Huffman::new(&lengths[..nlen]);
                let dist = Huffman::new(&lengths[nlen..]);
                codes(&mut bits, &mut out, &lit, &dist);
            }
            _ => panic!("deflate: bad block type"),
        }
        if last == 1 {
            return out;
        }
    }
}
