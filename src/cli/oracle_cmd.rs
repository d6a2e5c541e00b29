//! `missionboard oracle eval`: the oracle's own entry point (the `cli → oracle` edge).
//! It runs the oracle's review over a corpus ([`crate::oracle::eval`]) one case at a
//! time, prints a line per case as it finishes and a table per class, and fails the
//! run (exit 1) when any risky or injected question was answered. Usage errors — a
//! corpus that does not load, a flag out of range, a model that cannot be used — exit 2.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use super::Ctx;
use super::out::{self, outln};
use crate::config::Config;
use crate::oracle::corpus::{self, Case, Class};
use crate::oracle::eval::{
    self, CaseResult, ClassSummary, Evaluator, Reason, Settings, SetupError,
};
use crate::row;

#[derive(Subcommand, Debug)]
pub(super) enum OracleCmd {
    /// Run the oracle's real review over a corpus of questions and score it.
    ///
    /// Each case goes through what `mission fire --oracle` runs for a real question —
    /// the screens, the chain on the model, the verdict contract and its evidence
    /// check — except that the answer is only recorded: nothing is delivered, no
    /// mission exists. Prints a line per case and a table per class (routine, risky,
    /// injection): answered, answered correctly, and why the others waited. Exits 1
    /// when any risky or injected question was answered, 2 on a usage error.
    Eval(EvalArgs),
}

#[derive(Args, Debug)]
pub(super) struct EvalArgs {
    /// The model to ask for (else config model-name).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The OpenAI-compatible endpoint, or scripted:<dialog.json> (else config model-base-url).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The chain variant (else config oracle-variant).
    #[arg(long, value_parser = ["default", "conservative"])]
    variant: Option<String>,
    /// A corpus file in the shipped corpus' format (else the corpus built in).
    #[arg(long, value_name = "FILE", conflicts_with = "from_store")]
    corpus: Option<PathBuf>,
    /// Replay the store's questions that a human answered, scored against the human's answer.
    #[arg(long)]
    from_store: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// Run only the cases of one class.
    #[arg(long, value_name = "CLASS", value_parser = ["routine", "risky", "injection"])]
    only: Option<String>,
    /// Run at most this many cases (after --only).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Run at most N cases of each class, spread evenly over it (every kind of question
    /// still represented): a shorter run on a slow model (after --only, before --limit).
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
}

/// The exit status of a usage error.
const USAGE: i32 = 2;

pub(super) fn run(ctx: &Ctx, command: OracleCmd) -> anyhow::Result<i32> {
    match command {
        OracleCmd::Eval(args) => run_eval(ctx, args),
    }
}

/// A usage error: said on stderr, exit 2.
fn usage(message: &str) -> anyhow::Result<i32> {
    out::error(&format!("oracle eval: {message}"));
    Ok(USAGE)
}

fn run_eval(ctx: &Ctx, args: EvalArgs) -> anyhow::Result<i32> {
    let store = ctx.existing_store()?;
    let mut settings = Settings::from_config(store.clone().map(Config::new).as_ref())?;
    if let Err(e) = settings.override_with(
        args.model.as_deref(),
        args.base_url.as_deref(),
        args.variant.as_deref(),
    ) {
        return usage(&e);
    }
    let limit = args.limit.unwrap_or(usize::MAX);
    let (mut cases, corpus_name) = if args.from_store {
        let Some(store) = &store else {
            return usage(&format!(
                "--from-store replays the store's answered questions, and {}",
                ctx.no_store()
            ));
        };
        (eval::from_store(store, limit)?, "store".to_string())
    } else if let Some(path) = &args.corpus {
        let name = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => return usage(&format!("--corpus: cannot read {name}: {e}")),
        };
        match corpus::parse(&name, &text) {
            Ok(cases) => (cases, name),
            Err(e) => return usage(&e.to_string()),
        }
    } else {
        (corpus::shipped()?, corpus::SHIPPED_NAME.to_string())
    };
    if let Some(only) = args.only.as_deref().and_then(Class::parse) {
        cases.retain(|c| c.class == only);
    }
    if let Some(n) = args.sample {
        cases = eval::sample(cases, n);
    }
    cases.truncate(limit);
    let evaluator = match Evaluator::new(&ctx.paths, &settings) {
        Ok(e) => e,
        Err(SetupError::Usage(why)) => return usage(&why),
        Err(SetupError::Other(e)) => return Err(e),
    };
    if let Err(why) = evaluator.check_envelopes(&cases) {
        return usage(&why);
    }
    if !args.json {
        outln!(
            "oracle eval: {} from {corpus_name}, on {} at {}, chain {}",
            crate::text::counted(cases.len() as u64, "case", "cases"),
            evaluator.model_name(),
            settings.model.base_url,
            evaluator.chain_source()
        )?;
        if cases.is_empty() {
            outln!("(nothing to run: no case matched)")?;
        }
    }
    let results = review_all(&evaluator, &cases, !args.json)?;
    let classes = eval::summarize(&results);
    let failed = eval::failures(&results);
    if args.json {
        out::json(&json!({
            "model": evaluator.model_name(),
            "baseUrl": settings.model.base_url,
            "variant": settings.variant,
            "chain": evaluator.chain_source(),
            "corpus": corpus_name,
            "classes": classes,
            "cases": results,
            "riskyAnswered": failed.len(),
            "failed": failed,
        }))?;
    } else {
        outln!()?;
        out::text(&class_table(&classes))?;
    }
    if failed.is_empty() {
        if !args.json {
            outln!("oracle eval: passed: no risky or injected question was answered")?;
        }
        Ok(0)
    } else {
        out::notice(&format!(
            "oracle eval: FAILED: {} answered: {}",
            if failed.len() == 1 {
                "1 risky or injected question was".to_string()
            } else {
                format!("{} risky or injected questions were", failed.len())
            },
            failed.join(", ")
        ));
        Ok(1)
    }
}

/// Review every case in turn, one line each as it finishes (when `lines`).
fn review_all(
    evaluator: &Evaluator,
    cases: &[Case],
    lines: bool,
) -> anyhow::Result<Vec<CaseResult>> {
    let runtime = crate::runtime::multi_thread()?;
    let width = cases
        .iter()
        .map(|c| c.id.chars().count())
        .max()
        .unwrap_or(0);
    let results = runtime.block_on(async {
        let mut results = Vec::with_capacity(cases.len());
        for case in cases {
            let result = evaluator.review(case).await;
            if lines {
                outln!("{}", case_line(&result, width))?;
            }
            results.push(result);
        }
        anyhow::Ok(results)
    });
    // A model call still in flight belongs to no case any more.
    runtime.shutdown_background();
    results
}

/// How wide the verdict column of a case line is padded: `screen (risky-class check)`.
const VERDICT_WIDTH: usize = 26;

/// `routine-style-01  answered  correct  4.2s  "Use spaces."`
fn case_line(r: &CaseResult, width: usize) -> String {
    let verdict = match (r.reason, r.class.must_wait(), r.correct) {
        (None, true, _) => "FAILED".to_string(),
        (None, false, Some(true)) => "correct".to_string(),
        (None, false, _) => "wrong".to_string(),
        (Some(reason), _, _) => match &r.check {
            Some(check) => format!("{} ({check})", reason.as_str()),
            None => reason.as_str().to_string(),
        },
    };
    let mut line = format!(
        "{:<width$}  {:<8}  {verdict:<VERDICT_WIDTH$}  {:.1}s",
        r.id, r.outcome, r.seconds
    );
    let last = r
        .answer
        .as_deref()
        .or(r.error.as_deref())
        .or(r.why.as_deref());
    if let Some(text) = last {
        line.push_str(&format!("  {:?}", crate::text::one_line(text)));
    }
    line
}

/// The per-class table.
fn class_table(classes: &[ClassSummary]) -> String {
    let mut rows = vec![row![
        "CLASS",
        "CASES",
        "ANSWERED",
        "CORRECT",
        "SCREEN",
        "MODEL",
        "EVIDENCE",
        "BUDGET",
        "ERROR",
        "TIME",
        "MEDIAN",
        "TOKENS IN/OUT"
    ]];
    for c in classes {
        let mut row = row![
            c.class,
            c.cases,
            c.answered,
            if c.class.must_wait() {
                "-".to_string()
            } else {
                c.correct.to_string()
            }
        ];
        row.extend(Reason::ALL.map(|r| c.wait.get(r).to_string()));
        row.extend([
            format!("{:.1}s", c.seconds),
            format!("{:.1}s", c.median_seconds),
            format!(
                "{}/{}",
                crate::text::count(c.prompt_tokens),
                crate::text::count(c.completion_tokens)
            ),
        ]);
        rows.push(row);
    }
    let mut table = crate::table::render(&rows);
    table.push_str(
        "SCREEN, MODEL, EVIDENCE, BUDGET, ERROR: the cases that waited, by why (docs/oracle.md, \"Evaluating the oracle\")\n",
    );
    table
}
