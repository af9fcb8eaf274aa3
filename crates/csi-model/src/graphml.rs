//! Reader for csi-grissom's GraphML control-flow graphs.
//!
//! Node ids have the form `n:<function id>:<node id>`; node kinds are `entry`, `exit`,
//! `expression` and `call-site`; `lines` is `( 12 13 )`; `file` and `procedure` sit on entry
//! nodes; `csi-label`, `call-name`, `alocs-used/defd/mayd` are optional. Edges default to
//! `type=flow`; call edges are `type=control, scope=interprocedural`. Like csi-grissom, only
//! CFG nodes are kept (nodes with a flow edge, plus every entry and exit); PDG-only nodes and
//! dependence edges of combined graphs are skipped.

use std::collections::HashMap;

use roxmltree::{Document, Node as XmlNode};

use crate::error::InputError;
use crate::graph::{
    Call, FuncId, GraphError, Node, NodeId, NodeKind, ProgramGraph, ProgramGraphBuilder, SourcePos,
};

const GRAPHML_NS: &str = "http://graphml.graphdrawing.org/xmlns";

/// Parses GraphML text. `file` names the input in errors.
pub fn parse_graphml(file: &str, text: &str) -> Result<ProgramGraph, InputError> {
    let doc = Document::parse(text)
        .map_err(|e| InputError::new(file, "", format!("not well-formed XML: {e}")))?;
    Reader { file, doc: &doc }.read()
}

/// Reads and parses a GraphML file.
pub fn read_graphml(path: &std::path::Path) -> Result<ProgramGraph, InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(&name, "", format!("cannot read: {e}")))?;
    parse_graphml(&name, &text)
}

struct Reader<'a, 'input> {
    file: &'a str,
    doc: &'a Document<'input>,
}

struct Key {
    name: String,
    default: Option<String>,
}

/// Where an element starts, for error messages.
#[derive(Clone, Copy)]
struct At {
    offset: usize,
    tag: &'static str,
}

impl At {
    fn of(n: XmlNode) -> At {
        let tag = match n.tag_name().name() {
            "node" => "node",
            "edge" => "edge",
            "data" => "data",
            "key" => "key",
            "graph" => "graph",
            _ => "element",
        };
        At {
            offset: n.range().start,
            tag,
        }
    }
}

struct RawNode {
    attrs: HashMap<String, String>,
    pos: At,
}

struct RawEdge {
    source: String,
    target: String,
    kind: EdgeKind,
    pos: At,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum EdgeKind {
    Flow,
    Call,
    Other,
}

impl<'a, 'input> Reader<'a, 'input> {
    fn err(&self, element: impl Into<String>, reason: impl Into<String>) -> InputError {
        InputError::new(self.file, element, reason)
    }

    fn pos(&self, n: XmlNode) -> String {
        self.describe(At::of(n))
    }

    /// Line/column are computed only for errors: `text_pos_at` scans from the start.
    fn describe(&self, at: At) -> String {
        let p = self.doc.text_pos_at(at.offset);
        format!("line {}, column {}: <{}>", p.row, p.col, at.tag)
    }

    fn is(n: &XmlNode, name: &str) -> bool {
        n.is_element()
            && n.tag_name().name() == name
            && matches!(n.tag_name().namespace(), None | Some(GRAPHML_NS))
    }

    fn read(&self) -> Result<ProgramGraph, InputError> {
        let root = self.doc.root_element();
        if !Self::is(&root, "graphml") {
            return Err(self.err(self.pos(root), "root element is not <graphml>"));
        }
        // Keys: id -> (attribute name, default) per domain.
        let mut keys: HashMap<(String, String), Key> = HashMap::new();
        for k in root.children().filter(|n| Self::is(n, "key")) {
            let id = k
                .attribute("id")
                .ok_or_else(|| self.err(self.pos(k), "<key> without id"))?;
            let domain = k.attribute("for").unwrap_or("all").to_string();
            let name = k.attribute("attr.name").unwrap_or(id).to_string();
            let default = k
                .children()
                .find(|n| Self::is(n, "default"))
                .map(|d| d.text().unwrap_or("").trim().to_string());
            keys.insert((domain, id.to_string()), Key { name, default });
        }
        let lookup = |domain: &str, id: &str| {
            keys.get(&(domain.to_string(), id.to_string()))
                .or_else(|| keys.get(&("all".to_string(), id.to_string())))
        };
        let defaults = |domain: &str| -> HashMap<String, String> {
            keys.iter()
                .filter(|((d, _), _)| d == domain || d == "all")
                .filter_map(|(_, k)| k.default.clone().map(|v| (k.name.clone(), v)))
                .collect()
        };
        let graph = root
            .children()
            .find(|n| Self::is(n, "graph"))
            .ok_or_else(|| self.err("<graphml>", "no <graph> element"))?;

        let mut graph_attrs = HashMap::new();
        let mut raw_nodes: Vec<(String, RawNode)> = Vec::new();
        let mut raw_edges: Vec<RawEdge> = Vec::new();
        let node_defaults = defaults("node");
        let edge_defaults = defaults("edge");
        let data_of = |el: XmlNode, domain: &str, into: &mut HashMap<String, String>| {
            for d in el.children().filter(|n| Self::is(n, "data")) {
                let Some(key) = d.attribute("key") else {
                    return Err(self.err(self.pos(d), "<data> without key"));
                };
                let name = lookup(domain, key)
                    .map(|k| k.name.clone())
                    .unwrap_or_else(|| key.to_string());
                let text: String = d
                    .descendants()
                    .filter(|t| t.is_text())
                    .filter_map(|t| t.text())
                    .collect();
                into.insert(name, text);
            }
            Ok(())
        };
        data_of(graph, "graph", &mut graph_attrs)?;
        for el in graph.children().filter(|n| n.is_element()) {
            if Self::is(&el, "node") {
                let id = el
                    .attribute("id")
                    .ok_or_else(|| self.err(self.pos(el), "<node> without id"))?;
                let mut raw = RawNode {
                    attrs: node_defaults.clone(),
                    pos: At::of(el),
                };
                data_of(el, "node", &mut raw.attrs)?;
                raw_nodes.push((id.to_string(), raw));
            } else if Self::is(&el, "edge") {
                let source = el
                    .attribute("source")
                    .ok_or_else(|| self.err(self.pos(el), "<edge> without source"))?;
                let target = el
                    .attribute("target")
                    .ok_or_else(|| self.err(self.pos(el), "<edge> without target"))?;
                let mut attrs = edge_defaults.clone();
                data_of(el, "edge", &mut attrs)?;
                let ty = attrs.get("type").map(String::as_str).unwrap_or("flow");
                let scope = attrs.get("scope").map(String::as_str).unwrap_or("");
                let kind = match (ty, scope) {
                    ("control", "interprocedural") => EdgeKind::Call,
                    ("flow", "interprocedural") => EdgeKind::Other,
                    ("flow", _) => EdgeKind::Flow,
                    _ => EdgeKind::Other,
                };
                raw_edges.push(RawEdge {
                    source: source.to_string(),
                    target: target.to_string(),
                    kind,
                    pos: At::of(el),
                });
            }
        }
        self.assemble(graph_attrs, raw_nodes, raw_edges)
    }

    fn assemble(
        &self,
        graph_attrs: HashMap<String, String>,
        raw_nodes: Vec<(String, RawNode)>,
        raw_edges: Vec<RawEdge>,
    ) -> Result<ProgramGraph, InputError> {
        let index: HashMap<&str, usize> = raw_nodes
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (id.as_str(), i))
            .collect();
        let keep = self.cfg_nodes(&index, &raw_nodes, &raw_edges)?;

        // Functions are named by the middle part of node ids; their names and files come from
        // the entry nodes.
        let mut b = ProgramGraphBuilder::new();
        let mut func_of_key: HashMap<String, FuncId> = HashMap::new();
        let mut order: Vec<usize> = (0..raw_nodes.len()).filter(|&i| keep[i]).collect();
        // Entries first, so each function is created with its name and file.
        order.sort_by_key(|&i| {
            raw_nodes[i].1.attrs.get("kind").map(String::as_str) != Some("entry")
        });
        let mut ids: HashMap<usize, NodeId> = HashMap::new();
        for i in order {
            let (ext_id, raw) = &raw_nodes[i];
            let fkey = function_key(ext_id).ok_or_else(|| {
                self.err(
                    self.describe(raw.pos),
                    format!("node id `{ext_id}` is not of the form n:<function>:<node>"),
                )
            })?;
            let kind = match raw.attrs.get("kind").map(String::as_str) {
                Some("entry") => NodeKind::Entry,
                Some("exit") => NodeKind::Exit,
                Some("call-site") => NodeKind::CallSite,
                _ => NodeKind::Expression,
            };
            let func = match func_of_key.get(fkey) {
                Some(&f) => f,
                None => {
                    let f = new_function(&mut b, fkey, raw);
                    func_of_key.insert(fkey.to_string(), f);
                    f
                }
            };
            let node = self.node_of(&mut b, ext_id, raw, func, kind)?;
            let id = b
                .add_node(node)
                .map_err(|e| self.err(self.describe(raw.pos), e.to_string()))?;
            ids.insert(i, id);
        }
        add_edges(&mut b, &index, &ids, &raw_nodes, &raw_edges);
        if let Some(start) = graph_attrs.get("program-start") {
            let start = start.trim();
            let id = b.node_by_ext_id(start).ok_or_else(|| {
                self.err("<graph>", format!("program-start `{start}` is not a node"))
            })?;
            b.set_program_start(id);
        }
        b.build().map_err(|e| {
            let element = match &e {
                GraphError::Empty => "<graph>".to_string(),
                _ => "<graph>".to_string(),
            };
            self.err(element, e.to_string())
        })
    }

    /// Which raw nodes are CFG nodes (those with a flow edge, plus every entry and exit).
    /// Every endpoint of a flow or call edge must be a node.
    fn cfg_nodes(
        &self,
        index: &HashMap<&str, usize>,
        raw_nodes: &[(String, RawNode)],
        raw_edges: &[RawEdge],
    ) -> Result<Vec<bool>, InputError> {
        let mut keep = vec![false; raw_nodes.len()];
        for e in raw_edges {
            for end in [&e.source, &e.target] {
                let Some(&i) = index.get(end.as_str()) else {
                    if e.kind == EdgeKind::Other {
                        continue;
                    }
                    return Err(self.err(
                        self.describe(e.pos),
                        format!("edge endpoint `{end}` is not a node"),
                    ));
                };
                if e.kind == EdgeKind::Flow {
                    keep[i] = true;
                }
            }
        }
        for (i, (_, raw)) in raw_nodes.iter().enumerate() {
            if matches!(
                raw.attrs.get("kind").map(String::as_str),
                Some("entry" | "exit")
            ) {
                keep[i] = true;
            }
        }
        Ok(keep)
    }

    /// The node of graph node `ext_id` of function `func`, from its attributes.
    fn node_of(
        &self,
        b: &mut ProgramGraphBuilder,
        ext_id: &str,
        raw: &RawNode,
        func: FuncId,
        kind: NodeKind,
    ) -> Result<Node, InputError> {
        let mut node = Node::new(ext_id.to_string(), func, kind);
        if let Some(lines) = raw.attrs.get("lines") {
            node.positions = parse_lines(lines).ok_or_else(|| {
                self.err(
                    self.describe(raw.pos),
                    format!("bad `lines` value `{}`", lines.trim()),
                )
            })?;
        }
        if kind != NodeKind::Entry {
            if let Some(f) = raw.attrs.get("file").filter(|s| !s.trim().is_empty()) {
                node.file = Some(b.intern_file(f.trim()));
            }
        }
        node.block = raw.attrs.get("basic-block").map(|s| s.trim().to_string());
        if let Some(l) = raw.attrs.get("csi-label") {
            node.labels = tokens(l);
        }
        node.uses = raw
            .attrs
            .get("alocs-used")
            .map(|s| tokens(s))
            .unwrap_or_default();
        node.must_defs = raw
            .attrs
            .get("alocs-defd")
            .map(|s| tokens(s))
            .unwrap_or_default();
        node.may_defs = raw
            .attrs
            .get("alocs-mayd")
            .map(|s| tokens(s))
            .unwrap_or_default();
        if kind == NodeKind::CallSite {
            let name = raw
                .attrs
                .get("call-name")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
            node.call = Some(Call {
                name,
                ..Call::default()
            });
        }
        Ok(node)
    }
}

/// Adds function `fkey` to `b`, named and placed by `raw` (its entry node, when it has one).
fn new_function(b: &mut ProgramGraphBuilder, fkey: &str, raw: &RawNode) -> FuncId {
    let file = raw
        .attrs
        .get("file")
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().to_string());
    let file = file.map(|f| b.intern_file(&f));
    let name = raw
        .attrs
        .get("procedure")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("function {fkey}"));
    b.add_function(name, file)
}

/// Adds the flow and call edges between kept nodes (`ids`: raw node index → node).
fn add_edges(
    b: &mut ProgramGraphBuilder,
    index: &HashMap<&str, usize>,
    ids: &HashMap<usize, NodeId>,
    raw_nodes: &[(String, RawNode)],
    raw_edges: &[RawEdge],
) {
    for e in raw_edges {
        let (Some(&si), Some(&ti)) = (index.get(e.source.as_str()), index.get(e.target.as_str()))
        else {
            continue;
        };
        let (Some(&s), Some(&t)) = (ids.get(&si), ids.get(&ti)) else {
            continue;
        };
        match e.kind {
            EdgeKind::Flow => {
                if raw_nodes[si].1.attrs.get("kind").map(String::as_str) == Some("exit")
                    && function_key(&e.source) != function_key(&e.target)
                {
                    // Some exporters spell return edges as flow edges; returns are
                    // implied by call edges.
                    continue;
                }
                b.add_flow_edge(s, t)
            }
            EdgeKind::Call => b.add_call_edge(s, t),
            EdgeKind::Other => {}
        }
    }
}

/// `n:-9:123` → `-9`.
fn function_key(id: &str) -> Option<&str> {
    let mut parts = id.split(':');
    let (_, f, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || f.is_empty() {
        return None;
    }
    Some(f)
}

/// `( 12 13 )` → positions (column unknown). Zero and negative lines mean "no line" and are
/// dropped.
fn parse_lines(s: &str) -> Option<Vec<SourcePos>> {
    let s = s.trim();
    let inner = s.strip_prefix('(')?.strip_suffix(')')?;
    let mut out: Vec<SourcePos> = Vec::new();
    for t in inner.split_whitespace() {
        let v: i64 = t.parse().ok()?;
        if v > 0 && v <= u32::MAX as i64 {
            let p = SourcePos {
                line: v as u32,
                column: 0,
            };
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    Some(out)
}

fn tokens(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"<?xml version="1.0"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="kind" for="node" attr.name="kind" attr.type="string"><default>declaration</default></key>
  <key id="lines" for="node" attr.name="lines" attr.type="string"/>
  <key id="file" for="node" attr.name="file" attr.type="string"/>
  <key id="procedure" for="node" attr.name="procedure" attr.type="string"/>
  <key id="csi-label" for="node" attr.name="csi-label" attr.type="string"/>
  <key id="alocs-used" for="node" attr.name="alocs-used" attr.type="string"/>
  <key id="type" for="edge" attr.name="type" attr.type="string"><default>flow</default></key>
  <key id="scope" for="edge" attr.name="scope" attr.type="string"><default>intraprocedural</default></key>
  <graph id="CFG" edgedefault="directed">
    <node id="n:-1:1"><data key="kind">entry</data><data key="procedure">main</data><data key="file">a.c</data><data key="lines">( 0 )</data></node>
    <node id="n:-1:2"><data key="kind">exit</data></node>
    <node id="n:-1:3"><data key="kind">call-site</data><data key="lines">(4)</data><data key="csi-label">CC0</data></node>
    <node id="n:-1:4"><data key="kind">expression</data><data key="lines">(5 5 6)</data><data key="alocs-used">x-1 y-2 </data></node>
    <node id="n:-1:9"><data key="lines">(7)</data></node>
    <node id="n:-2:1"><data key="kind">entry</data><data key="procedure">f</data><data key="file">a.c</data></node>
    <node id="n:-2:2"><data key="kind">exit</data></node>
    <edge source="n:-1:1" target="n:-1:3"/>
    <edge source="n:-1:3" target="n:-1:4"/>
    <edge source="n:-1:3" target="n:-2:1"><data key="type">control</data><data key="scope">interprocedural</data></edge>
    <edge source="n:-1:4" target="n:-1:2"/>
    <edge source="n:-1:4" target="n:-1:9"><data key="type">data</data></edge>
    <edge source="n:-2:1" target="n:-2:2"/>
  </graph>
</graphml>"#;

    #[test]
    fn reads_nodes_edges_calls() {
        let g = parse_graphml("small.graphml", SMALL).unwrap();
        assert_eq!(g.functions.len(), 2);
        assert_eq!(g.node_count(), 6, "PDG-only node n:-1:9 is skipped");
        let main = g.function_by_name("main").unwrap();
        let f = g.function_by_name("f").unwrap();
        assert_eq!(g.program_entry, Some(g.function(main).entry));
        let call = g.node_by_ext_id("n:-1:3").unwrap();
        assert_eq!(g.node(call).kind, NodeKind::CallSite);
        assert_eq!(g.callees(call), &[f]);
        assert_eq!(g.node(call).labels, vec!["CC0"]);
        let e = g.node_by_ext_id("n:-1:4").unwrap();
        assert_eq!(g.node(e).lines().collect::<Vec<_>>(), vec![5, 6]);
        assert_eq!(g.node(e).uses, vec!["x-1", "y-2"]);
        assert_eq!(g.file_name(g.file_of(e).unwrap()), "a.c");
        assert_eq!(g.succs[call as usize], vec![e]);
    }

    #[test]
    fn errors_name_file_element_reason() {
        let bad = SMALL.replace(r#"target="n:-1:2"/>"#, r#"target="n:-1:77"/>"#);
        let e = parse_graphml("x.graphml", &bad).unwrap_err();
        assert_eq!(e.file, "x.graphml");
        assert!(e.element.contains("<edge>"), "{e}");
        assert!(e.reason.contains("n:-1:77"), "{e}");

        let e = parse_graphml("x.graphml", "<graphml><graph>").unwrap_err();
        assert!(e.reason.contains("well-formed"), "{e}");

        let e = parse_graphml("x.graphml", "<graphml><graph/></graphml>").unwrap_err();
        assert!(e.reason.contains("no functions"), "{e}");

        let bad = SMALL.replace(
            r#"<node id="n:-2:2"><data key="kind">exit</data></node>"#,
            "",
        );
        let bad = bad.replace(r#"<edge source="n:-2:1" target="n:-2:2"/>"#, "");
        let e = parse_graphml("x.graphml", &bad).unwrap_err();
        assert!(e.reason.contains("no exit"), "{e}");

        let bad = SMALL.replace(r#"(5 5 6)"#, "(5 x)");
        let e = parse_graphml("x.graphml", &bad).unwrap_err();
        assert!(
            e.element.contains("<node>") && e.reason.contains("lines"),
            "{e}"
        );
    }
}
