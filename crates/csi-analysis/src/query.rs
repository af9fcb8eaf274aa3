//! Control-flow queries (§6.3): "may A have run?", "may A not have run?", "may A have run
//! before B?", answered over the same constraints as best-effort coverage. A and B are node
//! sets (all nodes of a source line): "A ran" means some node of A ran, "A did not run" means
//! none did.

use csi_model::{FailureReport, NodeId, ProgramGraph, QueryAnswer};

use crate::becp::{prepare, ReportError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    MayRun(Vec<NodeId>),
    MayNotRun(Vec<NodeId>),
    MayRunBefore(Vec<NodeId>, Vec<NodeId>),
}

pub fn answer_query(
    g: &ProgramGraph,
    report: &FailureReport,
    query: &Query,
) -> Result<QueryAnswer, ReportError> {
    let prepared = prepare(g, report)?;
    if !prepared.walk {
        // No crashing walk: only what may have run anywhere, and what surely ran.
        let may = |x: &NodeId| prepared.elsewhere[*x as usize] || prepared.sure[*x as usize];
        let possible = match query {
            Query::MayRun(a) => a.iter().any(may),
            Query::MayNotRun(a) => !a.iter().any(|&x| prepared.sure[x as usize]),
            Query::MayRunBefore(a, b) => a.iter().any(may) && b.iter().any(may),
        };
        return Ok(if possible {
            QueryAnswer::Possible
        } else {
            QueryAnswer::Impossible
        });
    }
    let base = prepared.problem();
    base.check()
        .map_err(|e| ReportError::Inconsistent(e.to_string()))?;
    let with_vector = |v: Vec<u32>| {
        let mut p = prepared.problem();
        p.vectors.push(v);
        p.possible()
    };
    // Code that may have run outside the crashing walk (other threads, callbacks from library
    // code) may have run at any time, in any order relative to the walk.
    let elsewhere = |x: NodeId| prepared.elsewhere[x as usize];
    let may_run = |x: NodeId| elsewhere(x) || with_vector(vec![x]);
    let possible = match query {
        Query::MayRun(a) => a.iter().any(|&x| may_run(x)),
        Query::MayRunBefore(a, b) => a.iter().any(|&x| {
            b.iter().any(|&y| {
                with_vector(vec![x, y])
                    || ((elsewhere(x) || elsewhere(y)) && may_run(x) && may_run(y))
            })
        }),
        Query::MayNotRun(a) if a.iter().any(|&x| prepared.sure[x as usize]) => false,
        Query::MayNotRun(a) => {
            let mut p = prepared.problem();
            for &x in a {
                p.removed[x as usize] = true;
            }
            p.possible()
        }
    };
    Ok(if possible {
        QueryAnswer::Possible
    } else {
        QueryAnswer::Impossible
    })
}
