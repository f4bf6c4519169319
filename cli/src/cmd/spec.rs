//! `codedb spec --from-faiss "IVF256,PQ16"`: a FAISS index factory string as a codedb pipeline
//! SPEC, with what differs (the engine's `PipelineSpec::from_faiss_factory` does the work).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use codedb::PipelineSpec;

use crate::args;
use crate::out::{errln, outln};

#[derive(Args)]
/// Translate a FAISS index factory string into a codedb pipeline SPEC (for `train --pipeline`),
/// with notes on what differs; a factory string with no counterpart is refused naming the part.
#[command(after_help = "Examples:
  codedb spec --from-faiss \"IVF256,PQ16\"        # ivf:256,pq:16x8
  codedb spec --from-faiss \"OPQ16,PQ16\" --json  # spec and notes as JSON
  codedb spec --from-faiss LSH --dim 128

The SPEC goes to `codedb train --pipeline`. Notes (FAISS options that become build or search
options, such as nprobe or RFlat) go to stderr, or under \"notes\" with --json.

Exit codes: 0 translated, 1 the string has no counterpart or does not parse (the message names
the part), 2 usage error.")]
pub struct SpecArgs {
    /// The FAISS index factory string, as given to faiss.index_factory (e.g. "IVF256,PQ16").
    #[arg(long, value_name = "FACTORY")]
    pub from_faiss: String,
    /// The descriptors' dimension (FAISS's d); needed only where FAISS derives a count from it
    /// (LSH without a bit count).
    #[arg(long, value_name = "D", value_parser = args::count)]
    pub dim: Option<usize>,
    /// Print {"faiss": …, "spec": …, "notes": […]} as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: SpecArgs) -> Result<ExitCode> {
    let SpecArgs {
        from_faiss,
        dim,
        json,
    } = a;
    let t = PipelineSpec::from_faiss_factory(&from_faiss, dim)?;
    if json {
        let v = serde_json::json!({
            "faiss": from_faiss.trim(),
            "spec": t.spec,
            "notes": t.notes,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        outln!("{}", t.spec);
        for n in &t.notes {
            errln!("note: {n}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
