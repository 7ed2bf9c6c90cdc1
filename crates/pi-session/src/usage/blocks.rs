//! Usage in 5-hour billing windows (`pi usage blocks`), by the rules of ccusage's `blocks`
//! report: a block starts at the hour its first entry falls in (UTC) and lasts 5 hours; an
//! entry more than 5 hours after the block's start, or after the entry before it, starts a
//! new block; a pause of more than 5 hours between two entries shows as a gap. The active
//! block is the one whose end is still ahead and whose last entry is less than 5 hours old.

use super::{FileUsage, Origin, Range, Source, Tokens};

/// The length of a block, in milliseconds.
pub const BLOCK_MS: i64 = 5 * 3_600_000;

const HOUR_MS: i64 = 3_600_000;

/// One 5-hour window (or the gap between two).
#[derive(Debug, Clone)]
pub struct Block {
    /// The hour the first entry fell in (for a gap: 5 hours after the last entry before it).
    pub start_ms: i64,
    /// `start_ms` + 5 hours (for a gap: the next entry).
    pub end_ms: i64,
    /// The first and the last entry (none for a gap).
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    pub is_active: bool,
    pub is_gap: bool,
    pub entries: usize,
    pub tokens: Tokens,
    /// Per model, in the order first used.
    pub models: Vec<(String, Tokens)>,
    /// Per origin, in [`Origin`]'s order.
    pub origins: Vec<(Origin, Tokens)>,
    /// The facts in the block: (file index, fact index), in time order.
    pub facts: Vec<(usize, usize)>,
}

/// How fast a block's usage grew, over the time between its first and last entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurnRate {
    pub tokens_per_minute: f64,
    /// Input and output tokens only (what ccusage rates its indicator by).
    pub io_tokens_per_minute: f64,
    pub cost_per_hour: f64,
}

/// Where an active block ends at its burn rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// Rounded to a token.
    pub total_tokens: f64,
    /// Rounded to a cent.
    pub total_cost: f64,
    /// Minutes until the block ends, rounded (the projection runs over these).
    pub remaining_minutes: f64,
}

impl Block {
    fn new(start_ms: i64) -> Block {
        Block {
            start_ms,
            end_ms: start_ms + BLOCK_MS,
            first_ms: None,
            last_ms: None,
            is_active: false,
            is_gap: false,
            entries: 0,
            tokens: Tokens::default(),
            models: Vec::new(),
            origins: Vec::new(),
            facts: Vec::new(),
        }
    }

    /// The rate of usage between the first and the last entry; none for a gap or a block
    /// whose entries share one instant.
    pub fn burn_rate(&self) -> Option<BurnRate> {
        let (first, last) = (self.first_ms?, self.last_ms?);
        let minutes = (last - first) as f64 / 60_000.0;
        if self.is_gap || minutes <= 0.0 {
            return None;
        }
        Some(BurnRate {
            tokens_per_minute: self.tokens.total / minutes,
            io_tokens_per_minute: (self.tokens.input + self.tokens.output) / minutes,
            cost_per_hour: self.tokens.cost / minutes * 60.0,
        })
    }

    /// The usage of the active block at its end, when it keeps its burn rate from `now_ms`.
    pub fn projection(&self, now_ms: i64) -> Option<Projection> {
        if !self.is_active || self.is_gap {
            return None;
        }
        let rate = self.burn_rate()?;
        // Whole minutes, as ccusage 20 projects (and shows) them.
        let remaining = ((self.end_ms - now_ms) as f64 / 60_000.0).max(0.0).round();
        let tokens = self.tokens.total + rate.tokens_per_minute * remaining;
        let cost = self.tokens.cost + rate.cost_per_hour / 60.0 * remaining;
        Some(Projection {
            total_tokens: tokens.round(),
            total_cost: (cost * 100.0).round() / 100.0,
            remaining_minutes: remaining,
        })
    }
}

/// The blocks of the facts of `files` (already deduplicated) that `range` admits, oldest
/// first, gaps between them; `now_ms` decides which block is active.
pub fn blocks(files: &[FileUsage], range: &Range, tz: &super::TimeZone) -> Vec<Block> {
    let mut days = super::Days::new(tz);
    let mut all: Vec<(i64, usize, usize)> = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        for (xi, x) in f.facts.iter().enumerate() {
            if range.admits(x.ms, days.of(x.ms), tz) {
                all.push((x.ms, fi, xi));
            }
        }
    }
    // Stable: entries of one instant stay in file order.
    all.sort_by_key(|&(ms, _, _)| ms);
    let keys: Vec<Vec<String>> = files
        .iter()
        .map(|f| f.models.iter().map(super::Model::key).collect())
        .collect();
    let mut out: Vec<Block> = Vec::new();
    let mut current: Option<Block> = None;
    for (ms, fi, xi) in all {
        let (Some(f), Some(x)) = (files.get(fi), files.get(fi).and_then(|f| f.facts.get(xi)))
        else {
            continue;
        };
        if let Some(b) = &current
            && let Some(last) = b.last_ms
            && (ms - b.start_ms > BLOCK_MS || ms - last > BLOCK_MS)
        {
            if let Some(b) = current.take() {
                out.push(b);
            }
            if ms - last > BLOCK_MS {
                let mut gap = Block::new(last + BLOCK_MS);
                gap.end_ms = ms;
                gap.is_gap = true;
                out.push(gap);
            }
        }
        let b = current.get_or_insert_with(|| Block::new(ms.div_euclid(HOUR_MS) * HOUR_MS));
        b.first_ms.get_or_insert(ms);
        b.last_ms = Some(ms);
        b.entries += 1;
        b.tokens.add(&x.tokens);
        b.facts.push((fi, xi));
        let model = keys
            .get(fi)
            .and_then(|k| k.get(x.model as usize))
            .cloned()
            .unwrap_or_default();
        match b.models.iter_mut().find(|(m, _)| *m == model) {
            Some((_, t)) => t.add(&x.tokens),
            None => b.models.push((model, x.tokens)),
        }
        let origin = f.origin(x).cloned().unwrap_or(Origin {
            source: Source::Assistant,
            kind: None,
        });
        match b.origins.iter_mut().find(|(o, _)| *o == origin) {
            Some((_, t)) => t.add(&x.tokens),
            None => b.origins.push((origin, x.tokens)),
        }
    }
    out.extend(current);
    // A gap starts 5 hours after the last entry before it, which can be after the start of
    // the block that follows (the hour of its first entry): ordered by start, as ccusage.
    out.sort_by_key(|b| b.start_ms);
    for b in &mut out {
        b.origins.sort_by(|a, c| a.0.cmp(&c.0));
        b.is_active = !b.is_gap
            && b.last_ms.is_some_and(|l| range.now_ms - l < BLOCK_MS)
            && range.now_ms < b.end_ms;
    }
    out
}
