//! `pi context stats`

use clap::Args;

use super::{Opened, open, registry};
use crate::cmd::Ctx;
use crate::cmd::args::{FormatArgs, ModelRef, READ_SESSION_HELP, SessionArg, positive};
use crate::error::{Exit, ExitStatus};
use crate::output::{Style, escape};
use pi_agent::context::settings::{DEFAULT_RESERVE_TOKENS, Settings};
use pi_agent::context::tokens::{self, Need};
use pi_ai::value::{Obj, Value};

#[derive(Debug, Args)]
#[command(mut_arg("session", |a| a.help(READ_SESSION_HELP)))]
pub struct StatsArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Measure the context of the path to this entry (id or unique prefix) instead of the leaf
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// The model's context window in tokens [default: from models.json or the built-in table
    /// for the model]
    #[arg(long, value_name = "N", value_parser = positive)]
    pub context_window: Option<u64>,
    /// Tokens kept free below the window [default: compaction.reserveTokens from
    /// settings.json, else 16384]
    #[arg(long, value_name = "N", value_parser = positive)]
    pub reserve_tokens: Option<u64>,
    /// Take the context window of this model, as PROVIDER/ID [default: the model in effect
    /// at the end of the path]
    #[arg(long, value_name = "PROVIDER/ID", value_parser = ModelRef::parse)]
    pub model: Option<ModelRef>,
    #[command(flatten)]
    pub format: FormatArgs,
}

fn num(n: f64) -> Value {
    Value::Num(n)
}

fn no_window(what: String) -> anyhow::Error {
    Exit::new(ExitStatus::Usage, anyhow::anyhow!("{what}"))
        .hint("pass the window with --context-window N (e.g. --context-window 200000), or --model PROVIDER/ID, or define the model in models.json")
        .into()
}

/// `1234567` → `1,234,567`.
fn thousands(n: f64) -> String {
    if !n.is_finite() {
        return format!("{n}");
    }
    let neg = n < 0.0;
    let s = format!("{}", n.abs().round() as u128);
    let mut out = String::new();
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if neg { format!("-{out}") } else { out }
}

/// Where the context window and the reserve come from.
struct Window {
    window: u64,
    from: String,
    /// The model whose window it is (unless --context-window).
    model: Option<(String, String)>,
    reserve: u64,
    reserve_from: &'static str,
}

fn window(args: &StatsArgs, ctx: &Ctx, o: &Opened, settings: &Settings) -> anyhow::Result<Window> {
    let model = args
        .model
        .clone()
        .map(ModelRef::into_pair)
        .or_else(|| o.plan.info.model_ids())
        .or_else(|| {
            // A session without a model yet continues with the default one.
            let llm = pi_ai::config::Settings::load(&ctx.dirs.agent_dir, &ctx.cwd);
            llm.default_provider.zip(llm.default_model)
        });
    let (window, from) = match args.context_window {
        Some(w) => (w, "--context-window".to_owned()),
        None => {
            let Some((p, id)) = &model else {
                return Err(no_window(
                    "no context window: the path has no model (no assistant message or model change) \
                     and settings.json names no defaultProvider/defaultModel"
                        .into(),
                ));
            };
            match registry(ctx).find(p, id) {
                Some(m) if m.context_window > 0 => (m.context_window, m.source.as_str().to_owned()),
                _ => {
                    return Err(no_window(format!(
                        "no context window known for model {}/{} (not in models.json or the built-in table)",
                        pi_base::text::escape(p),
                        pi_base::text::escape(id)
                    )));
                }
            }
        }
    };
    // `compaction.modelOverrides` of the model whose window it is.
    let overridden = model
        .as_ref()
        .filter(|_| args.context_window.is_none())
        .and_then(|(p, id)| {
            let (m, _) = pi_ai::config::merged(&ctx.dirs.agent_dir, &ctx.cwd);
            pi_ai::config::CompactionOverrides::from_map(&m).reserve_tokens(p, id)
        });
    let (reserve, mut reserve_from) =
        match (args.reserve_tokens, overridden, settings.reserve_tokens) {
            (Some(r), _, _) => (r, "--reserve-tokens"),
            (None, Some(r), _) => (r, "compaction.modelOverrides"),
            (None, None, Some(r)) => (r, "settings"),
            (None, None, None) => (DEFAULT_RESERVE_TOKENS, "default"),
        };
    // The agent's rule for a reserve that does not fit the window (keepRecentTokens does
    // not matter here).
    let fitted = tokens::Reserves {
        reserve_tokens: reserve,
        keep_recent_tokens: 0,
    }
    .fit(window);
    let whose = model
        .as_ref()
        .filter(|_| args.context_window.is_none())
        .map(|(p, id)| format!("{p}/{id}"));
    if let Some(w) = fitted.warning("reserveTokens", whose.as_deref()) {
        crate::error::warn(&escape(&w));
        reserve_from = "window/4";
    }
    let reserve = fitted.used.reserve_tokens;
    Ok(Window {
        window,
        from,
        model: model.filter(|_| args.context_window.is_none()),
        reserve,
        reserve_from,
    })
}

/// The context measured one message at a time.
struct Measured {
    meter: tokens::Meter,
    /// Messages per role, in order of first appearance.
    roles: Vec<(String, u64)>,
    /// The entry whose usage the estimate rests on.
    usage_entry: Option<String>,
}

fn measure(o: &Opened) -> anyhow::Result<Measured> {
    let mut meter = tokens::Meter::default();
    let mut roles: Vec<(String, u64)> = Vec::new();
    let mut usage_entry: Option<u32> = None;
    o.each(|m| {
        let r = m
            .value
            .get("role")
            .and_then(Value::as_jstr)
            .map_or_else(|| "(none)".to_owned(), |r| r.text().into_owned());
        match roles.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => roles.push((r, 1)),
        }
        if tokens::reported(&m.value).is_some() {
            usage_entry = Some(m.entry);
        }
        meter.add_entry(&m.value, Some(m.entry), m.after_compaction);
        Ok(())
    })?;
    Ok(Measured {
        meter,
        roles,
        usage_entry: usage_entry.map(|i| o.id(i)),
    })
}

pub fn run(args: StatsArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let o = open(ctx, args.session.get()?, args.leaf.as_deref())?;
    let settings = Settings::load(&ctx.dirs.agent_dir, &ctx.cwd);
    for w in &settings.warnings {
        crate::error::warn(w);
    }
    let w = window(&args, ctx, &o, &settings)?;
    let mut m = measure(&o)?;
    let path = o.leaf.map(|l| o.session.path_to(l)).unwrap_or_default();
    let a = m.meter.assess(
        |e| tokens::usage_holds(&o.session, &path, e),
        o.plan.info.compaction.is_some(),
        w.window,
        w.reserve,
        settings.compaction_enabled,
    );
    if a.estimate.last_usage_index.is_none() {
        // The usage reported no longer describes the context (an edit or a compaction came
        // after it): the figure is an estimate of every message.
        m.usage_entry = None;
    }
    let leaf_id = match &args.leaf {
        Some(l) => o.session.resolve_entry(l).ok().map(|i| o.id(i)),
        None => o.session.leaf().map(|i| o.id(i)),
    };
    let st = Stats {
        o: &o,
        leaf_id,
        w,
        m,
        a,
        enabled: settings.compaction_enabled,
    };
    if ctx.out.human(args.format.get()) {
        let style = Style {
            on: ctx.out.color(),
        };
        for (label, text) in st.human(&style) {
            ctx.out
                .line(format!("{} {text}", style.bold(&format!("{label:<9}"))).as_bytes())?;
        }
    } else {
        ctx.out.line(&Value::Obj(st.record()).to_json())?;
    }
    Ok(ExitStatus::Success)
}

/// Everything `pi context stats` reports.
struct Stats<'a> {
    o: &'a Opened,
    leaf_id: Option<String>,
    w: Window,
    m: Measured,
    a: tokens::Assessment,
    enabled: bool,
}

impl Stats<'_> {
    fn percent(&self) -> f64 {
        self.a.estimate.tokens / self.w.window as f64 * 100.0
    }

    /// The JSON record.
    fn record(&self) -> Obj {
        let (info, est) = (&self.o.plan.info, &self.a.estimate);
        let opt_str = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::str);
        let mut roles = Obj::new();
        for (r, n) in &self.m.roles {
            roles.set(r, num(*n as f64));
        }
        let mut rec = Obj::new();
        rec.set("leaf", opt_str(&self.leaf_id));
        rec.set("pathEntries", num(info.path_len as f64));
        rec.set("messages", num(self.m.meter.messages as f64));
        rec.set("roles", Value::Obj(roles));
        rec.set("model", info.model.clone().unwrap_or(Value::Null));
        rec.set("estimatedTokens", num(self.m.meter.estimated as f64));
        rec.set("tokens", num(est.tokens));
        rec.set("usageTokens", num(est.usage_tokens));
        rec.set(
            "usageFrom",
            est.rule.map_or(Value::Null, |r| Value::str(r.as_str())),
        );
        rec.set("trailingTokens", num(est.trailing_tokens as f64));
        rec.set(
            "lastUsageIndex",
            est.last_usage_index.map_or(Value::Null, |k| num(k as f64)),
        );
        rec.set("lastUsageEntryId", opt_str(&self.m.usage_entry));
        rec.set(
            "usage",
            self.m.meter.usage().cloned().unwrap_or(Value::Null),
        );
        rec.set("usageStale", Value::Bool(self.a.stale));
        rec.set("contextWindow", num(self.w.window as f64));
        rec.set("contextWindowFrom", Value::str(&self.w.from));
        if let Some((p, id)) = &self.w.model {
            rec.set("contextWindowModel", Value::str(&format!("{p}/{id}")));
        }
        rec.set("reserveTokens", num(self.w.reserve as f64));
        rec.set("reserveTokensFrom", Value::str(self.w.reserve_from));
        rec.set("compactionEnabled", Value::Bool(self.enabled));
        rec.set("threshold", num(self.a.threshold));
        rec.set("percent", num(self.percent()));
        rec.set("shouldCompact", Value::Bool(self.a.need.compact()));
        rec
    }

    /// The human summary: labelled lines.
    fn human(&self, st: &Style) -> Vec<(&'static str, String)> {
        let (info, est) = (&self.o.plan.info, &self.a.estimate);
        let messages = self.m.meter.messages;
        let roles_text = self
            .m
            .roles
            .iter()
            .map(|(r, n)| format!("{n} {}", escape(r)))
            .collect::<Vec<_>>()
            .join(", ");
        let context = format!(
            "leaf {} ({} entries on the path{})",
            self.leaf_id.as_deref().map_or("(none)".into(), escape),
            thousands(info.path_len as f64),
            if info.compaction.is_some() {
                ", compacted"
            } else {
                ""
            }
        );
        let messages_text = if roles_text.is_empty() {
            "0".into()
        } else {
            format!("{messages}: {roles_text}")
        };
        let tokens_text = match (est.last_usage_index, est.rule) {
            (Some(k), Some(rule)) => {
                let later = messages - k - 1;
                format!(
                    "{} = {} reported ({} of entry {}) + {} estimated for {later} later message{}",
                    thousands(est.tokens),
                    thousands(est.usage_tokens),
                    rule.as_str(),
                    self.m.usage_entry.as_deref().map_or("?".into(), escape),
                    thousands(est.trailing_tokens as f64),
                    if later == 1 { "" } else { "s" }
                )
            }
            _ if self.m.meter.usage().is_some() => format!(
                "{} estimated (the usage last reported came before a compaction or context edit that changed the context)",
                thousands(est.tokens)
            ),
            _ => format!(
                "{} estimated (no usage reported on the path)",
                thousands(est.tokens)
            ),
        };
        let estimate = format!(
            "{} (characters / 4, every message)",
            thousands(self.m.meter.estimated as f64)
        );
        let model_text = match &self.w.model {
            Some((p, id)) => format!("{}/{}, {}", escape(p), escape(id), escape(&self.w.from)),
            None => self.w.from.clone(),
        };
        let window = format!(
            "{} ({model_text}) − reserve {} ({}) = threshold {}",
            thousands(self.w.window as f64),
            thousands(self.w.reserve as f64),
            self.w.reserve_from,
            thousands(self.a.threshold)
        );
        vec![
            ("context", context),
            ("messages", messages_text),
            ("tokens", tokens_text),
            ("estimate", estimate),
            ("window", window),
            ("compact", self.verdict(st)),
        ]
    }

    fn verdict(&self, st: &Style) -> String {
        let (tokens, threshold) = (self.a.estimate.tokens, self.a.threshold);
        match self.a.need {
            Need::Disabled => "no: compaction is disabled in settings".to_owned(),
            Need::UsagePredatesCompaction => {
                "no: no reply since the latest compaction, the reported usage predates it"
                    .to_owned()
            }
            Need::Above => format!(
                "{}: {} > {} ({:.1}% of the window)",
                st.yellow("yes"),
                thousands(tokens),
                thousands(threshold),
                self.percent()
            ),
            Need::Below => format!(
                "no: {} ≤ {} ({:.1}% of the window)",
                thousands(tokens),
                thousands(threshold),
                self.percent()
            ),
        }
    }
}
