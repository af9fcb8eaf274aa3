//! `.debug_CSI_CFG`: our extension — the complete CFG of every function in the node model of
//! DESIGN §3, one JSON object per line (JSON Lines), each carrying its format version.
//!
//! A record (`"csi_cfg": 1`):
//! ```json
//! {"csi_cfg":1,"name":"main","linkage_name":"main","file":"/src/a.c","static":false,
//!  "path_traced":true,"pt_skipped":null,"cc":"__CC_arr_…","bbc":null,"fc":null,
//!  "nodes":[{"kind":"entry"},{"kind":"call-site","block":0,"pt_block":2,
//!            "positions":[[9,3],[9,10]],"call":{"callee":"rand"},"labels":["CC0"],
//!            "uses":["x"],"must_defs":["y"],"may_defs":["*"]},{"kind":"exit"}],
//!  "edges":[[0,1],[1,2]],
//!  "pt":{"entry":2,"exit":3,"edges":[{"from":2,"to":4,"back":false,"increment":0,"weight":0}],
//!        "num_paths":6}}
//! ```
//! Node 0 is the function's synthetic entry node, node 1 its synthetic exit node; `block` is the
//! LLVM basic block's index in the function, `pt_block` its id in `.debug_PT` / `pt`.

use super::lines;
use crate::ballarus::PathEdge;
use crate::graph::{Node, NodeKind, ProgramGraph, ProgramGraphBuilder, SourcePos};
use crate::InputError;
use std::borrow::Cow;
use std::collections::HashMap;

/// The version this crate writes. Version 2 added `address_taken` and module records; version
/// 1 records are still read (their functions count as address-taken: sound, less precise).
/// Version 3 made the def/use sets precise enough for slicing (SSA values, `@globals`, `$ret`,
/// call `args`/`result`, function `params`/`escaped`); older sets are read as imprecise.
/// Version 4 added `cc_local_zeroed_in`: a local `__CC_arr` no longer holds its bits
/// everywhere in the function, so readers of version 3 must not read version 4 records.
/// Version 5 added `bbc_unprobed` (a block-coverage slot can stay zero although its block
/// ran) and `switch` (a switched-off function's arrays stay zero although it ran), so readers
/// of version 4 must not read version 5 records.
/// Version 6 added `off_calls` (a switched-on function's arrays stay zero although it ran,
/// as a replica, when a switched-off function called it).
/// Version 7 added `pt_runs` (a ring-buffer entry stands for one *or more* consecutive
/// iterations with that path), so readers of version 6 must not read version 7 records.
/// Version 8 added `bbc_local_omitted` (a block's slot in the local `__BBC_arr` can stay
/// zero although the block ran in the activation), so readers of version 7 must not read
/// version 8 records.
/// Version 9 added `cc_global_at_return` and `bbc_global_at_return` (a global slot can stay
/// zero although its site ran, in an activation still in progress), so readers of version 8
/// must not read version 9 records.
/// Version 10 added `entry_from_calls` (an entry block in `cc_unprobed` whose bit is the
/// callers', not one every way out of which passes a probe), so readers of version 9 must not
/// read version 10 records.
/// Version 11 added `pt_elided` (loops whose iterations the ring buffer does not hold: a
/// path that starts at such a head follows a stretch that stored nothing), so readers of
/// version 10 must not read version 11 records.
/// Version 12 added `pt_contracted` (loops whose blocks keep no part of the running sum: a
/// path through such a loop holds a made-up route inside it), so readers of version 11 must
/// not read version 12 records.
/// Version 13 writes the same data smaller (see [`wire`]): positions as one flat list of
/// deltas, statement lines as deltas, path edges as arrays. Readers of version 12 cannot
/// read it; this one reads every form.
/// Version 14 added `entry_patch` (the function's symbol is its replica, entered through a
/// NOP that `csi tracing` must turn into a jump to the instrumented body when it switches
/// the function on), so `csi tracing` of version 13, which would set the switch alone, must
/// not read version 14 records.
pub const CFG_FORMAT_VERSION: u32 = 14;

/// The first version whose positions and statement lines are deltas ([`wire`]).
const DELTAS_SINCE: u32 = 13;

/// Customizable tracing (`csi-cc --csi-scheme=custom`): the suffixes csi-cc gives a switchable
/// function's pieces — symbol and DWARF linkage name `<linkage or name><suffix>` — which the
/// reader tells them by. The uninstrumented replica:
pub const REPLICA_SUFFIX: &str = ".__csi_off";
/// The instrumented body, where it moved out of the function (symbol only: it keeps the
/// function's subprogram).
pub const BODY_SUFFIX: &str = ".__csi_on";
/// The scope of a call's switch test (an artificial subprogram, no code of its own).
pub const DISPATCH_SUFFIX: &str = ".__csi_dispatch";

/// One record per compilation unit (`{"csi_cfg":2,"module":"src/a.c",...}`): what the unit
/// gives library code that the function records cannot say.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgModule {
    pub csi_cfg: u32,
    pub module: String,
    /// Functions whose address the unit takes that another unit's record may describe:
    /// library (undefined) functions — calls through such a pointer run library code — and
    /// COMDAT definitions (inline and template functions), whose kept record may come from a
    /// unit where the address is not taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub address_taken_externals: Vec<String>,
    /// Functions run by the C runtime itself (`llvm.global_ctors` / `llvm.global_dtors`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_fini: Vec<String>,
    /// The unit's call graph before optimization, for units csi-cc optimized: every function
    /// the unit defines → the functions it defines that it called directly, with their number
    /// of call sites (`*` for indirect calls: any of `address_taken_before_optimization`).
    /// Inlining can leave no instruction of a callee in its caller (folded into the caller's
    /// own lines), so this is what says which subprograms may have run inside a function that
    /// ran: a callee whose call sites are fewer after optimization than before (counting
    /// those its inlined callers brought) was inlined or deleted.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub calls_before_optimization: std::collections::BTreeMap<String, CallsBefore>,
    /// Functions the unit defines whose address it took before optimization (indirect calls
    /// may have become direct, then inlined).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub address_taken_before_optimization: Vec<String>,
    /// File → function the unit defines → its lines with code before optimization, as
    /// `[first, last]` runs (nothing is inlined yet, so these are the function's own lines).
    /// Every instantiation of a template and every copy of a header's `static` function has
    /// the same lines: a line may have run if any function that has it may have run, even
    /// one that left no instruction after optimization.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub code_before_optimization:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<[u32; 2]>>>,
}

/// One function's direct callees before optimization (see
/// [`CfgModule::calls_before_optimization`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum CallsBefore {
    /// Callee → number of call sites.
    Counts(std::collections::BTreeMap<String, u32>),
    /// Callees without counts (records of an earlier csi-cc): every callee may have been
    /// inlined any number of times.
    Names(Vec<String>),
}

impl CfgModule {
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("plain data serializes");
        s.push('\n');
        s
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgCall {
    /// Direct callee's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callee: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub indirect: bool,
    /// For indirect calls: address-taken functions of a compatible type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// For indirect calls with too many candidates to list: any address-taken function of
    /// the program may be the callee.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub any_address_taken: bool,
    /// Names each actual argument uses (version 3), in argument order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<Vec<String>>>,
    /// The SSA name of the call's result when it is used (version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgNode {
    pub kind: NodeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pt_block: Option<u32>,
    /// `[line, column]` of the node's instructions, in order, duplicates removed.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "wire::positions"
    )]
    pub positions: Vec<[u32; 2]>,
    /// Source file when it differs from the function's (inlined code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Per position: 0 when it is the function's own code, `k` when it is code of the
    /// subprogram `inlined[k - 1]` of the function (inlined). Empty when all are 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<u32>,
    /// Indices of positions held only by unconditional branches, which may compile to no
    /// instruction (a fall-through) or to a jump: they never make a line "must".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weak: Vec<u32>,
    /// Optimized code: indices of positions held by a call that optimization cannot have
    /// moved out of its statement's control context (it may write memory, throw or not
    /// return: never speculated, hoisted or sunk). Other instructions may carry the line of a
    /// statement they were hoisted, speculated or if-converted out of, so only these make a
    /// line of an optimized function "must".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchored: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CfgCall>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// A call site whose coverage probe was omitted (csi-cc's probe placement): its coverage
    /// follows from two probed call sites of the same basic block, see [`CfgImplied`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implied: Option<CfgImplied>,
    /// A call site whose coverage probe was omitted because every call of its basic block
    /// comes back (csi-cc's placement): the label (`CC<j>`) of the block's last call site,
    /// which is probed, its probe stored right before that call. Straight-line code from this
    /// site reaches that probe unless the frame stops between them, so the site ran in an
    /// activation iff the activation set that bit, or it stands in this block at the site
    /// (in its call) or after it. Readers that ignore this field see the site without a
    /// label: unknown, which is sound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implied_by_last: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uses: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_defs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_defs: Vec<String>,
    /// The node's statements (instructions grouped at source-line changes, in order) with
    /// their own def/use sets, when there are several; the node's sets are their union.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stmts: Vec<CfgStmt>,
}

/// One statement group of a node (`.debug_CSI_CFG` format 3, optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgStmt {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "wire::line")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uses: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_defs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_defs: Vec<String>,
}

impl CfgNode {
    pub fn new(kind: NodeKind) -> Self {
        CfgNode {
            kind,
            block: None,
            pt_block: None,
            positions: Vec::new(),
            file: None,
            scopes: Vec::new(),
            weak: Vec::new(),
            anchored: Vec::new(),
            call: None,
            labels: Vec::new(),
            implied: None,
            implied_by_last: None,
            uses: Vec::new(),
            must_defs: Vec::new(),
            may_defs: Vec::new(),
            stmts: Vec::new(),
        }
    }
}

/// How an unprobed call site's coverage is reconstructed. `first` and `last` are the labels
/// (`CC<j>`) of probed call sites of the same basic block, `first` before this site and `last`
/// after it, with no `setjmp`-like call in the function. A probe is stored right before its
/// call, and straight-line code reaches a later call only through the earlier ones, so:
/// - `last` set ⇒ this site ran (in the same activation, for a local array);
/// - `first` clear ⇒ this site never ran;
/// - otherwise (`first` set, `last` clear) the site's bit is unknown from the array alone
///   (a callee between them may not have returned: crash, `exit`, `longjmp`). For a live
///   frame's local array the frame is then stopped inside this block, and its position
///   decides: after this site ⇒ ran, before it ⇒ did not.
///
/// Readers that ignore this field see the site without a label: unknown, which is sound.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgImplied {
    pub first: String,
    pub last: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgPathTracing {
    pub entry: u32,
    pub exit: u32,
    #[serde(with = "wire::edges")]
    pub edges: Vec<PathEdge>,
    pub num_paths: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CfgFunction {
    pub csi_cfg: u32,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linkage_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Internal linkage (C `static`).
    #[serde(default, rename = "static")]
    pub is_static: bool,
    /// The translation unit (main source file) the record was compiled from: tells apart
    /// the copies of a `static` function defined in a header that several units include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub path_traced: bool,
    /// The function's address is used other than as a direct callee (so indirect calls and
    /// library code may call it). `None` in version-1 records: unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_taken: Option<bool>,
    /// Compiled with optimization: code may have moved between source lines.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optimized: bool,
    /// Instrumented before optimization (`csi-cc --csi-instrument=before-optimization`):
    /// nodes, positions and probes are the source's (as unoptimized), but the optimized
    /// machine code a frame stops in may carry any line of the code between two probes, and
    /// inlined copies carry their own probes and frame state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optimized_after: bool,
    /// Every position of the function's code is in its nodes: a node ends where the source
    /// file changes (code the always-inliner put into an -O0 function, a file `#include`d
    /// into a body). Records without it, of code not instrumented after optimization, may
    /// have dropped the positions of another file's code from a node (csi-cc before
    /// 2026-11-28), so a line of an inlined subprogram may have run with no node of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub positions_complete: bool,
    /// Subprograms (linkage names) with code inlined into this function, from every
    /// instruction's debug scope — also those whose positions no node kept. A line of an
    /// optimized subprogram can run in any of its inlined copies with no instruction of its
    /// own there, so "never" needs every copy's function to have never started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<String>,
    /// Direct callees (defined in the unit) with fewer call sites after optimization than
    /// before — inlined (possibly leaving no instruction of their own) or deleted. Read with
    /// the module record's `calls_before_optimization`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optimized_away_calls: Vec<String>,
    /// Number of parameters (`%arg0`…), version 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<u32>,
    /// Locals whose address escapes (they may be read or written through `*`), version 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escaped: Option<Vec<String>>,
    /// Why path tracing was requested but not done (e.g. too many paths).
    #[serde(default)]
    pub pt_skipped: Option<String>,
    /// Global coverage arrays, when instrumented.
    #[serde(default)]
    pub cc: Option<String>,
    /// Only the call sites with labels `CC0` .. `CC<cc_local_len - 1>` have a bit in the
    /// local `__CC_arr` (absent when 0); the probes of the others store only into the global
    /// array. A live frame's position decides their local bits (and those of implied sites
    /// between them): a site in block X ran in the activation iff the frame is stopped after
    /// it in X (or in its call), or in a block that X dominates; it did not if the frame is
    /// before it in X or in a block X cannot reach (otherwise unknown). csi-cc does this only
    /// for blocks on no cycle that dominate every block they reach except quiet ones (no call,
    /// nothing that can fault: only a signal stops a frame there), in functions without
    /// `setjmp`-like calls, so one of the two holds wherever a call or a crash can stop a
    /// frame. Readers that ignore this field see no local bit for these sites: unknown, which
    /// is sound. Both sides compute this with [`crate::dominance::BlockGraph`]
    /// (`position_decided`, `site_ran`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_local_len: Option<u64>,
    /// Where the local `__CC_arr` is zeroed (version 4; before, at entry, and the array held
    /// the activation's bits everywhere): block H, which dominates every block with a local
    /// probe and every non-quiet block those reach. csi-cc zeroes at H's start when H is on
    /// no cycle, else on the edges entering H from blocks on no cycle; either way once per
    /// activation at most, before any local probe. A live frame's array holds its
    /// activation's bits only where H dominates the frame's position — in H itself only when
    /// H is on a cycle or the frame is in a call; elsewhere the array may hold an earlier
    /// activation's bytes, and the position alone decides every local bit (as for the sites
    /// beyond `cc_local_len`): no local probe's block reaches a non-quiet block outside H's
    /// region, and none reaches H again when H is on no cycle. Both sides:
    /// [`crate::dominance::BlockGraph`] (`zeroing_block`, `holds_activation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_local_zeroed_in: Option<u32>,
    /// The function is path-traced and has no back edge, and its call sites have no local
    /// coverage array (`__CC_arr`): a live frame's running path sum decodes to its whole path
    /// from the entry, which says which call sites ran in the activation. Readers that
    /// ignore this field see no local array: unknown, which is sound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cc_local_by_path: bool,
    /// Slots of the global `__CC_arr_*` (version 9) whose probe stores only into the local
    /// `__CC_arr` where the site is: each exit of the site's loop copies each such local
    /// bit that is set into its global slot (the name is from when only returns did). These
    /// are sites on a cycle (a loop stored both bytes every iteration), in functions that
    /// cannot unwind, in loops that no `longjmp` can leave by default (csi-cc's
    /// `--csi-global-stores`). A zero global slot then means "did not run" only in
    /// activations that left the loop or returned; an activation in progress says what it
    /// ran in its own local array. Readers decide such a slot from every live
    /// frame of the function, and leave it unknown when some activation may be unseen
    /// (a truncated stack walk, a passing run's coverage file). Activations ended by
    /// `longjmp` or a thread's cancellation are not seen, as for every derived bit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cc_global_at_return: Vec<u64>,
    /// Blocks whose call sites have no probe and no slot (csi-cc's dominator-based placement
    /// across blocks, ch. 4, Fig. 4.4 with only blocks that have a call probe-able): each
    /// such block's calls all come back (no `longjmp`, exception or `exit` can leave through
    /// them), and every way out of its dominator subtree passes a block with a probed call
    /// site. A block with a probed site ran when its first site's bit is set (the first site
    /// of a block is always probed), and an unprobed block ran in full when a probed block
    /// it dominates ran, or when it ran and no activation stands in it
    /// ([`crate::dominance::BlockGraph::derive_unprobed`], with the blocks without calls
    /// unknown). Readers that ignore this field see these sites without a label: unknown,
    /// which is sound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cc_unprobed: Vec<u32>,
    #[serde(default)]
    pub bbc: Option<String>,
    /// Coverage carried across calls (csi-cc's placement, ch. 4 taken past the function's own
    /// blocks): the function has internal linkage and is only ever called directly, at this
    /// many call sites of its unit, so it ran iff one of those calls was made. A caller with
    /// call-site coverage says so by the site's bit; one with block coverage only by its
    /// blocks (csi-cc counts such a call only where every call before it in its block comes
    /// back): the block did not run, or ran and was left (a block it dominates ran), or ran
    /// with no activation standing in it before the call. What it saves:
    /// - block coverage, a function of one block (csi-cc `--csi-bb-probes=calls`): no probe
    ///   and no array (`bbc` is `None`);
    /// - call-site coverage, when every call of the entry block but the last comes back and
    ///   the placement across blocks kept their probes: the entry block's sites have none
    ///   (block 0 is in `cc_unprobed`), and the entry's status stands for the block's bit —
    ///   it says whether the block ran, not that every way out of it passed a probe, so no
    ///   "did not run" comes from the blocks below it.
    ///
    /// Readers that ignore this field see a function without coverage: unknown, which is
    /// sound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_from_calls: Option<u32>,
    /// Blocks (version 9) whose probe stores only into the local `__BBC_arr`; the global
    /// slot is set when the activation leaves the block's loop, as `cc_global_at_return`'s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bbc_global_at_return: Vec<u32>,
    /// Blocks (indices, as the `BBC<k>` labels) whose block-coverage probe csi-cc omitted
    /// (version 5): their slots in `__BBC_arr` and the global array stay zero, and their
    /// coverage follows from the probed blocks they dominate and from where the function's
    /// live activations stand ([`crate::dominance::BlockGraph::coverage_probes`],
    /// [`derive_unprobed`](crate::dominance::BlockGraph::derive_unprobed)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bbc_unprobed: Vec<u32>,
    /// Probed blocks (version 8) whose probe stores only into the global array; the reader
    /// derives their local bits. Two kinds: blocks on no cycle that dominate every non-quiet
    /// block they reach (as the call sites beyond `cc_local_len`) — a live frame's position
    /// decides them: ran iff the frame stands in the block or in a block it dominates, not iff
    /// it stands where the block cannot reach (`position_decided`, `site_ran`); and, in a
    /// function without cycles, the blocks the locally minimal search dropped — an
    /// activation is one path from the entry, and the stored local bits with the frame's
    /// block single it out (`path_local_probes`, `derive_on_path`). Their `__BBC_arr` slots
    /// stay zero; when every probed block is one, the function has no `__BBC_arr`. Both
    /// sides: [`crate::dominance::BlockGraph`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bbc_local_omitted: Vec<u32>,
    /// Customizable tracing (`csi-cc --csi-scheme=custom`, version 5): the function's switch,
    /// a one-byte global (in the coverage section) that `csi tracing` sets in the binary. At 0
    /// every call runs an uninstrumented replica (its own subprogram in DWARF, of the same
    /// name), so the function's coverage arrays and frame state are no evidence; at 1 the
    /// instrumented body runs. Readers that ignore this field treat a switched-off function's
    /// zero coverage as "never": they must not read version 5 records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// Customizable tracing (version 14): the function's own symbol is an alias of its
    /// replica (`<name>.__csi_off`), whose entry is a 5-byte NOP; switched on, `csi tracing`
    /// writes a `jmp` to the instrumented body (`<name>.__csi_on`) over it. Calls from other
    /// units and through pointers so test no switch; the unit's own calls test the byte.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub entry_patch: bool,
    /// Customizable tracing (version 6): the switches of the functions whose replicas this
    /// function's replica calls directly (inlined or not): a switched-off function runs its
    /// callees' replicas, whatever their switches say. A function's coverage arrays are
    /// evidence of what did not run only when no function whose replica may run — switched
    /// off, or called by such a replica, and so on — calls its replica.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_calls: Vec<String>,
    #[serde(default)]
    pub fc: Option<String>,
    pub nodes: Vec<CfgNode>,
    pub edges: Vec<[u32; 2]>,
    #[serde(default)]
    pub pt: Option<CfgPathTracing>,
    /// Version 7: the frame's ring buffer stores a completed path only when it differs from
    /// the path stored last (`csi-cc --csi-pt-repeats=once`, optimized builds), so an entry
    /// stands for a run of one or more consecutive iterations that took that path. Readers
    /// take each entry that can follow itself (it ends on a back edge to the head it starts
    /// at) as two iterations: every edge and dependency of a longer run is in two, and a run
    /// of one gains only edges and dependencies that could have been.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pt_runs: bool,
    /// Version 11: heads (path-graph block ids) of loops whose iterations are not stored
    /// (`csi-cc --csi-pt-loops=elide|elide-after-entry`): their back edges restart the sum and
    /// store nothing. So a path that starts at one of these heads follows a stretch of the
    /// activation that left no entry — some way from where the path stored before it ended
    /// (or from the entry) to the head, then any number of iterations (with
    /// `elide-after-entry` the edges entering the head end a stored path, so the stretch is
    /// the iterations alone): the stored paths before it ran in the activation, but not
    /// right before it, and it may follow any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pt_elided: Vec<u32>,
    /// Version 12: loops contracted out of the running sum (`csi-cc --csi-pt-loops=contract`),
    /// each as its head and then every block of its natural loop (path-graph block ids,
    /// sorted; the head among them). The numbering is that of the whole graph, but no edge
    /// inside such a loop changes the sum and its back edges do nothing: an edge leaving it
    /// from block `u` adds, besides its own increment, the increments of one fixed route
    /// from the head to `u` inside the loop. So the sum is the loop's entry's while the
    /// frame is inside it (decode it at the head), and a path through the loop decodes to
    /// its true way to the head, then a made-up route to the block it truly left from,
    /// then its true way on: the blocks between head and that block are not known to have
    /// run, and any number of iterations ran before it left. Such loops hold no loop that
    /// stores its iterations, and none is inside another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pt_contracted: Vec<Vec<u32>>,
}

impl CfgFunction {
    /// Block `k`'s probe stores into the local `__BBC_arr` (neither `bbc_unprobed` nor
    /// `bbc_local_omitted`): its slot there is the activation's bit.
    pub fn bbc_stores_locally(&self, k: u32) -> bool {
        !self.bbc_unprobed.contains(&k) && !self.bbc_local_omitted.contains(&k)
    }

    /// One JSON line (with the trailing newline) in format 13's forms ([`wire`]); positions
    /// and statement lines are deltas when the record's version says so.
    pub fn to_line(&self) -> String {
        let mut s = if self.csi_cfg >= DELTAS_SINCE {
            let mut w = self.clone();
            w.deltas(true);
            serde_json::to_string(&w)
        } else {
            serde_json::to_string(self)
        }
        .expect("plain data serializes");
        s.push('\n');
        s
    }

    /// Turns positions and statement lines into deltas (`encode`) or back, in record order
    /// ([`wire`]). Wrapping arithmetic: a delta is the difference modulo 2³², written as a
    /// signed number.
    fn deltas(&mut self, encode: bool) {
        let (mut line, mut column, mut stmt_line) = (0u32, 0u32, 0u32);
        for n in &mut self.nodes {
            for p in &mut n.positions {
                let [a, b] = *p;
                if encode {
                    *p = if a == line {
                        [0, b.wrapping_sub(column)]
                    } else {
                        [a.wrapping_sub(line), b]
                    };
                    (line, column) = (a, b);
                } else {
                    (line, column) = if a == 0 {
                        (line, column.wrapping_add(b))
                    } else {
                        (line.wrapping_add(a), b)
                    };
                    *p = [line, column];
                }
            }
            for l in n.stmts.iter_mut().filter_map(|s| s.line.as_mut()) {
                if encode {
                    (*l, stmt_line) = (l.wrapping_sub(stmt_line), *l);
                } else {
                    stmt_line = stmt_line.wrapping_add(*l);
                    *l = stmt_line;
                }
            }
        }
    }

    /// Its file names as [`crate::paths::normalize`] writes them: the records of one header's
    /// `static` function compiled in units that reach it through different include
    /// directories then name one file.
    fn normalize_paths(&mut self) {
        let norm = |p: &mut Option<String>| {
            if let Some(s) = p {
                if let Cow::Owned(n) = crate::paths::normalize(s) {
                    *s = n;
                }
            }
        };
        norm(&mut self.file);
        norm(&mut self.unit);
        for n in &mut self.nodes {
            norm(&mut n.file);
        }
    }
}

impl CfgModule {
    /// Its file names as [`crate::paths::normalize`] writes them (see
    /// [`CfgFunction::normalize_paths`]).
    fn normalize_paths(&mut self) {
        // Two spellings can become one file: their functions' runs go together.
        let by_file = std::mem::take(&mut self.code_before_optimization);
        for (file, functions) in by_file {
            let file = crate::paths::normalize(&file).into_owned();
            let into = self.code_before_optimization.entry(file).or_default();
            for (name, mut runs) in functions {
                into.entry(name).or_default().append(&mut runs);
            }
        }
    }
}

/// How version 13 writes what earlier versions wrote as `[[line, column], …]`, `"line": n`
/// and `{"from": …}` objects, for records ÷1.16 smaller once compressed (grep `realistic`:
/// 251 → 211 KB). The forms are told apart by their JSON types, so a reader takes both; only
/// whether numbers are deltas depends on the record's version (`CfgFunction::deltas`).
/// - `positions`: one flat list `[l₁, c₁, l₂, c₂, …]`. As deltas, in record order across
///   nodes: `[0, Δcolumn]` on the line before, else `[Δline, column]`.
/// - a statement's `line`: the delta from the record's statement line before.
/// - path edges: `[from, to, increment, weight]`, and a fifth element `1` for a back edge.
mod wire {
    use crate::ballarus::PathEdge;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// A number of the wire: deltas are differences modulo 2³² (`deltas`), written signed.
    fn signed(v: u32) -> i64 {
        i64::from(v as i32)
    }

    fn unsigned<E: serde::de::Error>(v: i64) -> Result<u32, E> {
        i32::try_from(v)
            .map(|v| v as u32)
            .map_err(|_| E::custom(format!("{v} is out of range")))
    }

    pub mod positions {
        use super::*;

        pub fn serialize<S: Serializer>(v: &[[u32; 2]], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(v.iter().flatten().map(|&x| signed(x)))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<[u32; 2]>, D::Error> {
            #[derive(Deserialize)]
            #[serde(untagged)]
            enum Form {
                Pairs(Vec<[u32; 2]>),
                Flat(Vec<i64>),
            }
            match Form::deserialize(d)? {
                Form::Pairs(p) => Ok(p),
                Form::Flat(f) if f.len() % 2 == 0 => f
                    .chunks(2)
                    .map(|c| Ok([unsigned(c[0])?, unsigned(c[1])?]))
                    .collect(),
                Form::Flat(_) => Err(serde::de::Error::custom("odd number of position fields")),
            }
        }
    }

    pub mod line {
        use super::*;

        pub fn serialize<S: Serializer>(v: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
            v.map(signed).serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
            Option::<i64>::deserialize(d)?.map(unsigned).transpose()
        }
    }

    pub mod edges {
        use super::*;

        pub fn serialize<S: Serializer>(v: &[PathEdge], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(v.iter().map(|e| {
                let mut row = vec![i64::from(e.from), i64::from(e.to), e.increment, e.weight];
                if e.back {
                    row.push(1);
                }
                row
            }))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathEdge>, D::Error> {
            #[derive(Deserialize)]
            #[serde(untagged)]
            enum Form {
                Object(PathEdge),
                Row(Vec<i64>),
            }
            Vec::<Form>::deserialize(d)?
                .into_iter()
                .map(|f| match f {
                    Form::Object(e) => Ok(e),
                    Form::Row(r) if r.len() == 4 || (r.len() == 5 && r[4] == 1) => {
                        let id = |v: i64| {
                            u32::try_from(v).map_err(|_| {
                                serde::de::Error::custom(format!("block {v} is out of range"))
                            })
                        };
                        Ok(PathEdge {
                            from: id(r[0])?,
                            to: id(r[1])?,
                            back: r.len() == 5,
                            increment: r[2],
                            weight: r[3],
                        })
                    }
                    Form::Row(r) => Err(serde::de::Error::custom(format!(
                        "a path edge is [from, to, increment, weight] and 1 for a back edge, \
                         not {r:?}"
                    ))),
                })
                .collect()
        }
    }
}

/// Parses `.debug_CSI_CFG`'s function records. Records of a newer version are an error (not
/// silently misread).
pub fn parse_cfg(bytes: &[u8], file: &str) -> Result<Vec<CfgFunction>, InputError> {
    Ok(parse_cfg_all(bytes, file)?.0)
}

/// Parses `.debug_CSI_CFG`: function records and module records.
pub fn parse_cfg_all(
    bytes: &[u8],
    file: &str,
) -> Result<(Vec<CfgFunction>, Vec<CfgModule>), InputError> {
    let mut out = Vec::new();
    let mut modules = Vec::new();
    let text = super::frame::decode(bytes, file)?;
    for (ln, line) in lines(&text, file)? {
        if line.trim().is_empty() {
            continue;
        }
        // The version and kind first (a record of a newer format must not be misread), then
        // the record itself straight from the text: no `Value` tree in between (the CFG of a
        // 250k-line program is tens of MB).
        #[derive(serde::Deserialize)]
        struct Head {
            csi_cfg: Option<u64>,
            #[serde(default)]
            module: Option<serde::de::IgnoredAny>,
        }
        let head: Head = serde_json::from_str(line)
            .map_err(|e| InputError::new(file, format!("line {ln}"), format!("not JSON: {e}")))?;
        match head.csi_cfg {
            Some(n) if (1..=CFG_FORMAT_VERSION as u64).contains(&n) => {}
            Some(n) => {
                return Err(InputError::new(
                    file,
                    format!("line {ln}"),
                    format!("CFG format version {n} is not supported (this reader knows {CFG_FORMAT_VERSION})"),
                ))
            }
            None => {
                return Err(InputError::new(
                    file,
                    format!("line {ln}"),
                    "record without a `csi_cfg` version",
                ))
            }
        }
        if head.module.is_some() {
            let mut m: CfgModule = serde_json::from_str(line)
                .map_err(|e| InputError::new(file, format!("line {ln}"), e.to_string()))?;
            m.normalize_paths();
            modules.push(m);
            continue;
        }
        let mut f: CfgFunction = serde_json::from_str(line)
            .map_err(|e| InputError::new(file, format!("line {ln}"), e.to_string()))?;
        if f.csi_cfg >= DELTAS_SINCE {
            f.deltas(false);
        }
        f.normalize_paths();
        let name = f.name.clone();
        let at =
            |reason: String| InputError::new(file, format!("line {ln}: function `{name}`"), reason);
        let n = f.nodes.len() as u32;
        for &[a, b] in &f.edges {
            if a >= n || b >= n {
                return Err(at(format!(
                    "edge {a}->{b} mentions a node that does not exist"
                )));
            }
        }
        if f.nodes.iter().filter(|x| x.kind == NodeKind::Entry).count() != 1
            || f.nodes.iter().filter(|x| x.kind == NodeKind::Exit).count() != 1
        {
            return Err(at("needs exactly one entry and one exit node".into()));
        }
        out.push(f);
    }
    Ok((out, modules))
}

/// Builds the program graph from the CFG records of a whole executable. Node ids are
/// `<fn>#<k>` (`<fn>@<file>#<k>` when several functions share a name, e.g. `static` ones).
/// Direct calls resolve to the function of that name (preferring the caller's file for static
/// functions); indirect calls to their candidates.
pub fn cfg_to_program_graph(funcs: &[CfgFunction], file: &str) -> Result<ProgramGraph, InputError> {
    cfg_program_graph(funcs, &[], file)
}

/// [`cfg_to_program_graph`] with the module records, which say what library code may call
/// back into (see [`ProgramGraph::async_roots`]).
///
/// Indirect calls get, besides the candidates csi-cc found in the caller's file, every
/// address-taken function of the other files (a pointer may come from anywhere).
pub fn cfg_program_graph(
    funcs: &[CfgFunction],
    modules: &[CfgModule],
    file: &str,
) -> Result<ProgramGraph, InputError> {
    cfg_linked_program_graph(&mut funcs.to_vec(), &vec![None; funcs.len()], modules, file)
}

/// [`cfg_program_graph`] over the records of several loaded objects: `objects[i]` names the
/// shared object `funcs[i]` came from (`None`: the executable). A direct call resolves within
/// the caller's object first, then to a non-static function of any object (the executable's
/// first: it is first in the dynamic linker's search order) — a call through the PLT into
/// another instrumented library is a call edge. Node ids of a shared object's functions are
/// prefixed with its file name and `!` (`libwalk.so!walk_sum#3`); the executable's keep
/// [`cfg_to_program_graph`]'s form.
///
/// What only the graph needs — each node's positions, file, inlined scopes, def/use sets and
/// statements — is moved out of the records into the graph, not copied: the records keep
/// what reading traces needs (kinds, blocks, labels, calls, implied call sites, edges). In a
/// large optimized program the moved part is most of the records' memory.
pub fn cfg_linked_program_graph(
    funcs: &mut [CfgFunction],
    objects: &[Option<String>],
    modules: &[CfgModule],
    file: &str,
) -> Result<ProgramGraph, InputError> {
    assert_eq!(funcs.len(), objects.len(), "one object per function record");
    let mut payloads: Vec<Vec<NodePayload>> = funcs
        .iter_mut()
        .map(|f| f.nodes.iter_mut().map(NodePayload::take).collect())
        .collect();
    let funcs: &[CfgFunction] = funcs;
    let mut b = ProgramGraphBuilder::new();
    b.reserve(funcs.len(), funcs.iter().map(|f| f.nodes.len()).sum());
    // A function's address may be taken in another unit, which sees only a declaration (or
    // its own copy of a COMDAT function whose kept record is another unit's) and lists it
    // among its module record's `address_taken_externals`.
    let taken_elsewhere: std::collections::HashSet<&str> = modules
        .iter()
        .flat_map(|m| m.address_taken_externals.iter().map(String::as_str))
        .collect();
    let address_taken = |f: &CfgFunction| {
        f.address_taken != Some(false) || taken_elsewhere.contains(f.name.as_str())
    };
    let mut names = NodeIdPrefixes::new(funcs, objects);
    let mut by_name: HashMap<&str, Vec<(usize, u32)>> = HashMap::new(); // name -> (func idx, FuncId)
    let mut first: Vec<u32> = Vec::new();
    for (i, f) in funcs.iter().enumerate() {
        let fid = add_function(&mut b, f, &objects[i]);
        by_name.entry(f.name.as_str()).or_default().push((i, fid));
        let prefix = names.prefix(i);
        let mut base = None;
        let payloads = std::mem::take(&mut payloads[i]);
        for (k, (n, payload)) in f.nodes.iter().zip(payloads).enumerate() {
            let node = graph_node(&mut b, f, n, payload, fid, format!("{prefix}#{k}"));
            let id = b.add_node(node).map_err(|e| {
                InputError::new(
                    file,
                    format!("function `{}` node {k}", f.name),
                    e.to_string(),
                )
            })?;
            base.get_or_insert(id);
        }
        first.push(base.unwrap_or(0));
        for &[x, y] in &f.edges {
            b.add_flow_edge(first[i] + x, first[i] + y);
        }
    }
    // Address-taken functions, once (not per indirect call: a 250k-line program has
    // thousands of each).
    let taken_functions: Vec<(&str, Option<&str>)> = funcs
        .iter()
        .filter(|g| address_taken(g))
        .map(|g| (g.name.as_str(), g.file.as_deref()))
        .collect();
    add_call_edges(&mut b, funcs, objects, &first, &by_name, &taken_functions);
    let defined = |name: &str| by_name.contains_key(name);
    b.set_async_roots(async_roots(
        funcs,
        objects,
        modules,
        &defined,
        &address_taken,
    ));
    for m in modules {
        b.add_calls_before_optimization(
            &m.calls_before_optimization,
            &m.address_taken_before_optimization,
            &m.code_before_optimization,
        );
    }
    b.build()
        .map_err(|e| InputError::new(file, "program graph", e.to_string()))
}

/// The prefixes of the functions' node ids (`name#k`): the name, made unique — with the file
/// when several files define it, with the unit (or an ordinal) for copies of one header's
/// `static` function — and the shared object's file name and `!` for a library's functions.
struct NodeIdPrefixes<'a> {
    funcs: &'a [CfgFunction],
    objects: &'a [Option<String>],
    count: HashMap<&'a str, usize>,
    count_in_file: HashMap<(&'a str, Option<&'a str>), usize>,
    /// Copies of one header's `static` function seen so far.
    copies_seen: HashMap<(&'a str, Option<&'a str>), usize>,
}

impl<'a> NodeIdPrefixes<'a> {
    fn new(funcs: &'a [CfgFunction], objects: &'a [Option<String>]) -> Self {
        let mut count: HashMap<&str, usize> = HashMap::new();
        let mut count_in_file: HashMap<(&str, Option<&str>), usize> = HashMap::new();
        for f in funcs {
            *count.entry(f.name.as_str()).or_default() += 1;
            *count_in_file
                .entry((f.name.as_str(), f.file.as_deref()))
                .or_default() += 1;
        }
        NodeIdPrefixes {
            funcs,
            objects,
            count,
            count_in_file,
            copies_seen: HashMap::new(),
        }
    }

    /// The prefix of function `i` (functions are asked in order: copies are numbered so).
    fn prefix(&mut self, i: usize) -> String {
        let f = &self.funcs[i];
        let key = (f.name.as_str(), f.file.as_deref());
        let mut prefix = if self.count_in_file[&key] > 1 {
            let k = self.copies_seen.entry(key).or_default();
            *k += 1;
            match &f.unit {
                Some(u) => format!("{}@{}@{u}", f.name, f.file.as_deref().unwrap_or("?")),
                None => format!("{}@{}@{k}", f.name, f.file.as_deref().unwrap_or("?")),
            }
        } else if self.count[f.name.as_str()] > 1 {
            format!("{}@{}", f.name, f.file.as_deref().unwrap_or("?"))
        } else {
            f.name.clone()
        };
        if let Some(o) = self.objects[i].as_deref() {
            let tag = o.rsplit('/').next().unwrap_or(o);
            prefix = format!("{tag}!{prefix}");
        }
        prefix
    }
}

/// Adds the function of record `f` (from shared object `object`, `None`: the executable).
fn add_function(b: &mut ProgramGraphBuilder, f: &CfgFunction, object: &Option<String>) -> u32 {
    let fid_file = f.file.as_deref().map(|p| b.intern_file(p));
    let fid = b.add_function(f.name.clone(), fid_file);
    let func = b.function_mut(fid);
    func.linkage_name = f.linkage_name.clone();
    func.path_traced = f.path_traced;
    func.coverage_instrumented = f.cc.is_some() || f.bbc.is_some() || f.fc.is_some();
    func.optimized = f.optimized;
    func.optimized_after = f.optimized_after;
    func.positions_complete = f.positions_complete;
    func.inlined = f.inlined.clone();
    func.optimized_away_calls = f.optimized_away_calls.clone();
    func.object = object.clone();
    if f.csi_cfg >= 3 {
        func.precise_def_use = true;
        func.params = f.params.unwrap_or(0);
        func.escaped = f.escaped.clone().unwrap_or_default();
    }
    fid
}

/// The graph node of record node `n` of function `f` (graph function `fid`), with id `id`:
/// positions (scopes, weak and anchored indices kept only when consistent with them), block,
/// labels, def/use sets, call.
/// The parts of a node record only the program graph uses, moved out of the record.
struct NodePayload {
    positions: Vec<[u32; 2]>,
    file: Option<String>,
    scopes: Vec<u32>,
    weak: Vec<u32>,
    anchored: Vec<u32>,
    uses: Vec<String>,
    must_defs: Vec<String>,
    may_defs: Vec<String>,
    stmts: Vec<CfgStmt>,
}

impl NodePayload {
    fn take(n: &mut CfgNode) -> Self {
        use std::mem::take;
        NodePayload {
            positions: take(&mut n.positions),
            file: n.file.take(),
            scopes: take(&mut n.scopes),
            weak: take(&mut n.weak),
            anchored: take(&mut n.anchored),
            uses: take(&mut n.uses),
            must_defs: take(&mut n.must_defs),
            may_defs: take(&mut n.may_defs),
            stmts: take(&mut n.stmts),
        }
    }
}

fn graph_node(
    b: &mut ProgramGraphBuilder,
    f: &CfgFunction,
    n: &CfgNode,
    p: NodePayload,
    fid: u32,
    id: String,
) -> Node {
    let mut node = Node::new(id, fid, n.kind);
    node.positions = p
        .positions
        .iter()
        .map(|&[line, column]| SourcePos { line, column })
        .collect();
    node.file = p.file.as_deref().map(|p| b.intern_file(p));
    if p.scopes.len() == p.positions.len()
        && p.scopes.iter().all(|&k| k as usize <= f.inlined.len())
    {
        node.scopes = p.scopes;
    }
    let in_range = |k: &u32| (*k as usize) < p.positions.len();
    node.weak = p.weak.into_iter().filter(in_range).collect();
    node.anchored = p.anchored.into_iter().filter(in_range).collect();
    node.block = n
        .pt_block
        .map(|x| x.to_string())
        .or_else(|| n.block.map(|x| format!("bb{x}")));
    node.labels = n.labels.clone();
    node.uses = p.uses;
    node.must_defs = p.must_defs;
    node.may_defs = p.may_defs;
    node.stmts = p
        .stmts
        .into_iter()
        .map(|st| crate::graph::Stmt {
            line: st.line,
            uses: st.uses,
            must_defs: st.must_defs,
            may_defs: st.may_defs,
        })
        .collect();
    if let Some(c) = &n.call {
        node.call = Some(crate::graph::Call {
            callees: Vec::new(),
            name: c.callee.clone(),
            indirect: c.indirect,
            args: c.args.clone(),
            result: c.result.clone(),
        });
        if node.kind != NodeKind::Entry && node.kind != NodeKind::Exit {
            node.kind = NodeKind::CallSite;
        }
    }
    node
}

/// Interprocedural call edges: from every call site to the entry of each function it may
/// call — its callee, or an indirect call's candidates plus the address-taken functions
/// (`taken_functions`) of other files (of every file when the record says any may be) —
/// resolved by name (see `resolve_callee`), and every exported definition that may
/// interpose.
fn add_call_edges(
    b: &mut ProgramGraphBuilder,
    funcs: &[CfgFunction],
    objects: &[Option<String>],
    first: &[u32],
    by_name: &HashMap<&str, Vec<(usize, u32)>>,
    taken_functions: &[(&str, Option<&str>)],
) {
    let entry_of = |fi: usize| -> Option<u32> {
        funcs[fi]
            .nodes
            .iter()
            .position(|n| n.kind == NodeKind::Entry)
            .map(|k| first[fi] + k as u32)
    };
    for (i, f) in funcs.iter().enumerate() {
        for (k, n) in f.nodes.iter().enumerate() {
            let Some(c) = &n.call else { continue };
            let site = first[i] + k as u32;
            let names: Vec<&str> = if c.indirect {
                let mut v: Vec<&str> = c.candidates.iter().map(String::as_str).collect();
                v.extend(
                    taken_functions
                        .iter()
                        .filter(|&&(_, file)| c.any_address_taken || file != f.file.as_deref())
                        .map(|&(name, _)| name),
                );
                v.sort_unstable();
                v.dedup();
                v
            } else {
                c.callee.as_deref().into_iter().collect()
            };
            for name in names {
                let Some(defs) = by_name.get(name) else {
                    continue;
                };
                let Some(fi) = resolve_callee(funcs, objects, i, defs) else {
                    continue;
                };
                // Symbol interposition: the dynamic linker may bind a call to an exported
                // function to another object's definition of that name (the executable's
                // first), so every exported definition is a possible callee.
                let interposed = defs.iter().map(|&(g, _)| g).filter(|&g| {
                    g != fi
                        && !funcs[fi].is_static
                        && !funcs[g].is_static
                        && objects[g] != objects[fi]
                });
                for callee in std::iter::once(fi).chain(interposed) {
                    if let Some(e) = entry_of(callee) {
                        b.add_call_edge(site, e);
                    }
                }
            }
        }
    }
}

/// The definition (index in `funcs`) a call from function `i` binds to among `defs`, the
/// definitions of its name: a static definition of the caller's unit (a header's static
/// function has one copy per unit), else of the caller's file, else a non-static one of the
/// caller's object, else of any object (the executable's first; static functions of another
/// object are not reachable by name).
fn resolve_callee(
    funcs: &[CfgFunction],
    objects: &[Option<String>],
    i: usize,
    defs: &[(usize, u32)],
) -> Option<usize> {
    let f = &funcs[i];
    let same_object = |fi: usize| objects[fi] == objects[i];
    let pick = defs
        .iter()
        .find(|&&(fi, _)| {
            funcs[fi].is_static && f.unit.is_some() && funcs[fi].unit == f.unit && same_object(fi)
        })
        .or_else(|| {
            defs.iter().find(|&&(fi, _)| {
                funcs[fi].is_static && funcs[fi].file == f.file && same_object(fi)
            })
        })
        .or_else(|| {
            defs.iter()
                .find(|&&(fi, _)| !funcs[fi].is_static && same_object(fi))
        })
        .or_else(|| {
            let mut public = defs.iter().filter(|&&(fi, _)| !funcs[fi].is_static);
            let first = public.clone().next();
            public.find(|&&(fi, _)| objects[fi].is_none()).or(first)
        })
        .or_else(|| defs.iter().find(|&&(fi, _)| same_object(fi)));
    pick.map(|&(fi, _)| fi)
}

/// The functions library code may call back into (see [`ProgramGraph::async_roots`]): the
/// C runtime's init/fini functions, a shared library's exported functions, and — when the
/// program calls (or takes the address of) a library function not known never to call back
/// — the address-taken ones.
fn async_roots(
    funcs: &[CfgFunction],
    objects: &[Option<String>],
    modules: &[CfgModule],
    defined: &dyn Fn(&str) -> bool,
    address_taken: &dyn Fn(&CfgFunction) -> bool,
) -> Vec<u32> {
    // Library code that may call back: any call to (or address taken of) a library
    // function not known to never call back.
    let unknown_library_call = funcs.iter().any(|f| {
        f.address_taken.is_none()
            || f.nodes.iter().any(|n| {
                n.call.as_ref().is_some_and(|c| {
                    !c.indirect
                        && c.callee
                            .as_deref()
                            .is_some_and(|x| !defined(x) && !crate::libc::never_calls_back(x))
                })
            })
    }) || modules.iter().any(|m| {
        m.address_taken_externals
            .iter()
            .any(|x| !defined(x) && !crate::libc::never_calls_back(x))
    });
    let mut roots: Vec<u32> = Vec::new();
    for (i, f) in funcs.iter().enumerate() {
        let init = modules.iter().any(|m| m.init_fini.contains(&f.name));
        // Any object may call a shared library's exported functions, and a program that
        // dlopens it calls them through `dlsym`'s pointers, which no record names.
        let exported = objects[i].is_some() && !f.is_static;
        if init || exported || (unknown_library_call && address_taken(f)) {
            roots.push(i as u32);
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `name` in `file` whose one call site calls `callee` (if any).
    fn record(name: &str, file: &str, is_static: bool, callee: Option<&str>) -> CfgFunction {
        let call = callee.map(|c| format!(r#","call":{{"callee":"{c}"}}"#));
        let line = format!(
            r#"{{"csi_cfg":4,"name":"{name}","file":"{file}","static":{is_static},"path_traced":false,"address_taken":false,
               "nodes":[{{"kind":"entry"}},{{"kind":"exit"}},{{"kind":"expression","positions":[[3,1]]{}}}],
               "edges":[[0,2],[2,1]]}}"#,
            call.unwrap_or_default()
        );
        parse_cfg(line.replace('\n', " ").as_bytes(), "t")
            .unwrap()
            .remove(0)
    }

    /// Version 13's wire forms ([`wire`]): the record reads back as it was written, with
    /// lines going down and up across nodes, columns on one line, a line 0, statement lines
    /// and a back edge; a version-12 record keeps its absolute positions and object edges.
    #[test]
    fn version_13_records_are_deltas_that_read_back_exactly() {
        let v12 = r#"{"csi_cfg":12,"name":"f","file":"a.c","path_traced":true,
            "nodes":[{"kind":"entry"},{"kind":"exit"},
              {"kind":"expression","block":0,"pt_block":0,"positions":[[40,9],[40,3],[38,12]],
               "stmts":[{"line":40,"uses":["x"]},{"line":38}]},
              {"kind":"call-site","block":1,"pt_block":1,"positions":[[0,0],[41,5],[41,5]],
               "call":{"callee":"g"},"stmts":[{"uses":["y"]},{"line":41}]}],
            "edges":[[0,2],[2,3],[3,2],[3,1]],
            "pt":{"entry":0,"exit":2,"num_paths":3,"edges":[
              {"from":0,"to":1,"back":false,"increment":0,"weight":0},
              {"from":1,"to":0,"back":true,"increment":-2,"weight":1}]}}"#
            .replace('\n', " ");
        let old = parse_cfg(v12.as_bytes(), "t").unwrap().remove(0);
        assert_eq!(old.nodes[2].positions, [[40, 9], [40, 3], [38, 12]]);
        assert_eq!(old.to_line(), serde_json::to_string(&old).unwrap() + "\n");
        let mut new = old.clone();
        new.csi_cfg = 13;
        let line = new.to_line();
        assert!(
            line.contains(r#""positions":[40,9,0,-6,-2,12]"#)
                && line.contains(r#""positions":[-38,0,41,5,0,0]"#)
                && line.contains(r#"{"line":40,"uses":["x"]},{"line":-2}"#)
                && line.contains(r#"{"uses":["y"]},{"line":3}"#)
                && line.contains(r#""edges":[[0,1,0,0],[1,0,-2,1,1]]"#),
            "{line}"
        );
        assert_eq!(parse_cfg(line.as_bytes(), "t").unwrap(), vec![new.clone()]);
        let bad = line.replace("[1,0,-2,1,1]", "[1,0,-2,1,2]");
        assert!(parse_cfg(bad.as_bytes(), "t").is_err());
    }

    /// csi-cc's compressed pieces (one per object or COMDAT group, linked with NUL padding and
    /// with text pieces of older objects) read as the same records as the plain text.
    #[test]
    fn compressed_and_plain_pieces_read_alike() {
        let lines = |fs: &[CfgFunction], module: &str| {
            let mut t: String = fs.iter().map(CfgFunction::to_line).collect();
            t.push_str(
                &CfgModule {
                    csi_cfg: CFG_FORMAT_VERSION,
                    module: module.into(),
                    ..Default::default()
                }
                .to_line(),
            );
            t
        };
        let a = lines(&[record("main", "a.c", false, Some("f"))], "a.c");
        let b = lines(&[record("f", "b.c", true, None)], "b.c");
        let c = lines(&[record("g", "c.c", false, None)], "c.c");
        let plain = format!("{a}{b}{c}");
        let mut mixed = crate::sections::frame::encode(a.as_bytes(), 19).unwrap();
        mixed.extend_from_slice(b"\0\0");
        mixed.extend_from_slice(b.as_bytes());
        mixed.extend(crate::sections::frame::encode(c.as_bytes(), 1).unwrap());
        let want = parse_cfg_all(plain.as_bytes(), "t").unwrap();
        assert_eq!(want.0.len(), 3);
        assert_eq!(parse_cfg_all(&mixed, "t").unwrap(), want);
        // A damaged piece is an error, never a panic or a partial read.
        mixed.truncate(mixed.len() - 1);
        let e = parse_cfg_all(&mixed, "t").unwrap_err().to_string();
        assert!(e.contains("compressed piece at byte"), "{e}");
    }

    fn callee_names(g: &ProgramGraph, caller: &str, object: Option<&str>) -> Vec<String> {
        let f = (0..g.functions.len() as u32)
            .find(|&f| g.function(f).name == caller && g.function(f).object.as_deref() == object)
            .unwrap();
        let site = g.function(f).nodes[2];
        let mut v: Vec<String> = g
            .callees(site)
            .iter()
            .map(|&c| {
                let c = g.function(c);
                format!("{}@{}", c.name, c.object.as_deref().unwrap_or("exe"))
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn calls_resolve_across_objects() {
        let funcs = vec![
            record("main", "main.c", false, Some("walk")),
            record("helper", "main.c", true, None),
            record("walk", "walk.c", false, Some("helper")),
            record("helper", "walk.c", true, None),
            record("log", "walk.c", false, None),
            record("emit", "walk.c", false, Some("log")),
            record("log", "main.c", false, None),
        ];
        let lib = Some("/x/libwalk.so".to_string());
        let objects = vec![
            None,
            None,
            lib.clone(),
            lib.clone(),
            lib.clone(),
            lib.clone(),
            None,
        ];
        let g = cfg_linked_program_graph(&mut funcs.clone(), &objects, &[], "t").unwrap();
        // Through the PLT into the library.
        assert_eq!(callee_names(&g, "main", None), ["walk@/x/libwalk.so"]);
        // A static function is called in its own object only.
        assert_eq!(
            callee_names(&g, "walk", lib.as_deref()),
            ["helper@/x/libwalk.so"]
        );
        // An exported name defined in two objects: either may be bound.
        assert_eq!(
            callee_names(&g, "emit", lib.as_deref()),
            ["log@/x/libwalk.so", "log@exe"]
        );
        // Node ids stay unique; the library's carry its file name.
        let id = |f: usize| g.node(g.functions[f].entry).ext_id.clone();
        assert_eq!(id(0), "main#0");
        assert_eq!(id(3), "libwalk.so!helper@walk.c#0");
        // Exported library functions may be entered by any object (dlsym).
        assert!(g.async_roots.contains(&2) && !g.async_roots.contains(&3));
    }

    /// An indirect call whose candidates were too many to list may call any address-taken
    /// function, its own file's included; a listed one, its candidates and other files'.
    #[test]
    fn indirect_calls_with_unlisted_candidates_may_call_any_address_taken_function() {
        let mut funcs = vec![
            record("dispatch", "a.c", false, None),
            record("same_file", "a.c", false, None),
            record("other_file", "b.c", false, None),
            record("not_taken", "a.c", false, None),
        ];
        funcs[1].address_taken = Some(true);
        funcs[2].address_taken = Some(true);
        let indirect = |any: bool| CfgCall {
            indirect: true,
            any_address_taken: any,
            ..Default::default()
        };
        funcs[0].nodes[2].call = Some(indirect(true));
        let g = cfg_program_graph(&funcs, &[], "t").unwrap();
        assert_eq!(
            callee_names(&g, "dispatch", None),
            ["other_file@exe", "same_file@exe"]
        );
        funcs[0].nodes[2].call = Some(indirect(false));
        let g = cfg_program_graph(&funcs, &[], "t").unwrap();
        assert_eq!(callee_names(&g, "dispatch", None), ["other_file@exe"]);
    }
}
