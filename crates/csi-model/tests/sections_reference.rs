//! Our readers against real metadata written by the original csi-cc v1.4.0
//! (`../shared/reference/csi-cc-1.4.0-metadata/`, skipped when absent), plus bad input.

use csi_model::ballarus::PathEnd;
use csi_model::sections::{
    parse_bbc, parse_cc, parse_cfg, parse_fc, parse_pt, CfgFunction, PtBlockKind,
};
use std::path::{Path, PathBuf};

fn reference_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/reference/csi-cc-1.4.0-metadata");
    if d.is_dir() {
        Some(d)
    } else {
        // CI runs with ../shared beside the checkout: there the data must be found.
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is absent in CI",
            d.display()
        );
        eprintln!(
            "skipping: {} is absent (reference data lives outside the repository)",
            d.display()
        );
        None
    }
}

/// The reference files of -O1..-O3 that equal -O0 are stored as git symlinks (a file holding the
/// target's name); follow them.
fn read_reference(p: &Path) -> Vec<u8> {
    let bytes = std::fs::read(p).unwrap();
    if let Ok(s) = std::str::from_utf8(&bytes) {
        if !s.contains('\n') && s.ends_with(".expected") {
            return read_reference(&p.with_file_name(s));
        }
    }
    bytes
}

#[test]
fn every_reference_file_parses() {
    let Some(dir) = reference_dir() else { return };
    let mut counts = [0usize; 4];
    let mut files = 0;
    for test in std::fs::read_dir(&dir).unwrap() {
        for f in std::fs::read_dir(test.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let bytes = read_reference(&p);
            let what = name.rsplit('-').next().unwrap();
            files += 1;
            match what {
                "PT.expected" => {
                    let fs = parse_pt(&bytes, &name).unwrap_or_else(|e| panic!("{e}"));
                    assert!(!fs.is_empty(), "{name}");
                    for f in &fs {
                        let g = f.path_graph().expect("entry and exit");
                        let n = g
                            .num_paths()
                            .unwrap_or_else(|e| panic!("{name} {}: {e}", f.name));
                        assert!(n >= 1);
                        // Every completed path id decodes to a path from ENTRY/loop head that
                        // ends at EXIT or on a back edge, along edges of the graph.
                        for id in 0..n.min(200) as i64 {
                            let d = g
                                .decode_complete(id)
                                .unwrap_or_else(|e| panic!("{name} {} id {id}: {e}", f.name));
                            for w in d.blocks.windows(2) {
                                assert!(f
                                    .edges
                                    .iter()
                                    .any(|e| e.from == w[0] && e.to == w[1] && !e.back));
                            }
                            match &d.end {
                                PathEnd::Exit => {
                                    let last = *d.blocks.last().unwrap();
                                    assert!(f
                                        .edges
                                        .iter()
                                        .any(|e| e.from == last && e.to == g.exit));
                                }
                                PathEnd::BackEdge(h) => assert!(!h.is_empty()),
                                PathEnd::Partial => unreachable!(),
                            }
                        }
                    }
                    counts[0] += fs.len();
                }
                "CC.expected" => {
                    counts[1] += parse_cc(&bytes, &name)
                        .unwrap_or_else(|e| panic!("{e}"))
                        .len()
                }
                "BBC.expected" => {
                    counts[2] += parse_bbc(&bytes, &name)
                        .unwrap_or_else(|e| panic!("{e}"))
                        .len()
                }
                "FC.expected" => {
                    counts[3] += parse_fc(&bytes, &name)
                        .unwrap_or_else(|e| panic!("{e}"))
                        .len()
                }
                other => panic!("unexpected reference file kind {other}"),
            }
        }
    }
    assert_eq!(files, 76, "all reference files visited");
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
}

/// csi-cc writes each object's piece of a section zstd-compressed (`sections::frame`): every
/// reference file, cut into compressed and plain pieces as the linker concatenates them (NUL
/// padding in between), reads as the same records as the text.
#[test]
fn compressed_reference_files_read_as_the_text() {
    use csi_model::sections::frame::encode;
    let Some(dir) = reference_dir() else { return };
    let mut files = 0;
    for test in std::fs::read_dir(&dir).unwrap() {
        for f in std::fs::read_dir(test.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let text = read_reference(&p);
            // Cut after a function's last line (before a `#` line) near the middle.
            let cut = (text.len() / 2..text.len())
                .find(|&i| text[i..].starts_with(b"\n#"))
                .map_or(text.len(), |i| i + 1);
            let mut pieces = encode(&text[..cut], 19).unwrap();
            pieces.extend_from_slice(b"\0\0\0");
            pieces.extend_from_slice(&text[cut..]);
            let whole = encode(&text, 3).unwrap();
            macro_rules! same {
                ($parse:ident) => {{
                    let want = $parse(&text, &name).unwrap();
                    assert_eq!($parse(&pieces, &name).unwrap(), want, "{name}");
                    assert_eq!($parse(&whole, &name).unwrap(), want, "{name}");
                }};
            }
            match name.rsplit('-').next().unwrap() {
                "PT.expected" => same!(parse_pt),
                "CC.expected" => same!(parse_cc),
                "BBC.expected" => same!(parse_bbc),
                "FC.expected" => same!(parse_fc),
                other => panic!("unexpected reference file kind {other}"),
            }
            files += 1;
        }
    }
    assert_eq!(files, 76, "all reference files visited");
}

#[test]
fn reference_details_are_read_exactly() {
    let Some(dir) = reference_dir() else { return };
    let pt = parse_pt(
        &read_reference(&dir.join("pi/pi-O0.csi-static-PT.expected")),
        "pi PT",
    )
    .unwrap();
    let main = pt.iter().find(|f| f.name == "main").unwrap();
    assert_eq!(main.entry(), Some(2));
    assert_eq!(main.exit(), Some(3));
    let b10 = main.block(10).unwrap();
    assert!(b10.null && b10.items.is_empty());
    assert!(main.block(6).unwrap().ends_path());
    assert_eq!(
        main.block(6).unwrap().lines().collect::<Vec<_>>(),
        vec![28, 28, 28, 28, 28, 28, 28, 29, 29, 29, 30, 30]
    );
    assert_eq!(main.block(2).unwrap().kind, PtBlockKind::Entry);
    let back: Vec<_> = main.edges.iter().filter(|e| e.back).collect();
    assert_eq!(back.len(), 1);
    assert_eq!(
        (back[0].from, back[0].to, back[0].increment, back[0].weight),
        (9, 4, 3, 3)
    );

    let cc = parse_cc(
        &read_reference(&dir.join("funcs/funcs-O1.csi-static-CC.expected")),
        "funcs CC",
    )
    .unwrap();
    let a = &cc[0];
    assert_eq!(
        (a.name.as_str(), a.global.as_str()),
        ("a", "__CC_arr_tests_funcs_funcs_c_a")
    );
    assert_eq!(a.sites[2].index, -1);
    assert_eq!(a.sites[2].label, None);
    assert_eq!(a.sites[2].line, 18);
    assert_eq!(a.sites[2].callee.as_deref(), Some("abc"));
    let fp = parse_cc(
        &read_reference(&dir.join("fnptr/fnptr-O0.csi-static-CC.expected")),
        "fnptr CC",
    )
    .unwrap();
    assert_eq!(fp[0].sites[0].callee, None, "`?` = indirect call");

    let bbc = parse_bbc(
        &read_reference(&dir.join("pi/pi-O0.csi-static-BBC.expected")),
        "pi BBC",
    )
    .unwrap();
    assert_eq!(bbc[1].blocks[4].label, "BBC4");
    assert!(bbc[1].blocks[4].lines.is_empty());
    let fc = parse_fc(
        &read_reference(&dir.join("multifile/multifile-O0.csi-static-FC.expected")),
        "FC",
    )
    .unwrap();
    assert_eq!(fc.len(), 4);
    assert_eq!(fc[3].global, "__FC_arr_tests_multifile_definer_c_boo");
}

#[test]
fn written_sections_read_back_identically() {
    let Some(dir) = reference_dir() else { return };
    for (t, o) in [("loop", 0), ("funcs", 0), ("pi", 0), ("fnptr", 1)] {
        let p = dir.join(format!("{t}/{t}-O{o}.csi-static-PT.expected"));
        let bytes = read_reference(&p);
        let fs = parse_pt(&bytes, "x").unwrap();
        let mut s = String::new();
        for f in &fs {
            f.write(&mut s);
        }
        assert_eq!(
            s.trim_end(),
            String::from_utf8(bytes).unwrap().trim_end(),
            "{t}"
        );
        let p = dir.join(format!("{t}/{t}-O{o}.csi-static-CC.expected"));
        let bytes = read_reference(&p);
        let mut s = String::new();
        for f in parse_cc(&bytes, "x").unwrap() {
            f.write(&mut s);
        }
        assert_eq!(
            s.trim_end(),
            String::from_utf8(bytes).unwrap().trim_end(),
            "{t}"
        );
    }
}

#[test]
fn concatenated_sections_with_padding() {
    let a = b"#\nf\n1|EXIT\n0|ENTRY|3|-1\n$\n0->1|0$0\n";
    let b = b"#\ng\n3|EXIT\n2|ENTRY|7|-1\n$\n2->3|0$0\n";
    let mut bytes = a.to_vec();
    bytes.extend_from_slice(&[0, 0, 0]);
    bytes.extend_from_slice(b);
    let fs = parse_pt(&bytes, "cat").unwrap();
    assert_eq!(fs.len(), 2);
    assert_eq!(fs[1].name, "g");
}

#[test]
fn bad_input_is_an_error_with_location() {
    let cases: &[(&[u8], &str)] = &[
        (b"main\n", "line 1"),
        (b"#\nmain\n0|ENTRY|3\n", "end of section"),
        (b"#\nmain\n1|EXIT\n0|ENTRY|x\n$\n", "line 4"),
        (b"#\nmain\n1|EXIT\n0|ENTRY|3\n$\n0=>1|0$0\n", "line 6"),
        (b"#\nmain\n1|EXIT\n0|ENTRY|3\n$\n0->7|0$0\n", "line 6"),
        (b"#\nmain\n1|EXIT|4\n0|ENTRY|3\n$\n", "line 3"),
        (b"#\nmain\n0|ENTRY|3\n$\n", "line 4"),
        (b"#\nmain\n\xff\n", "byte"),
    ];
    for (bytes, elem) in cases {
        let e = parse_pt(bytes, "bad.pt").unwrap_err();
        assert_eq!(e.file, "bad.pt");
        assert!(e.element.contains(elem), "{e} (wanted {elem})");
    }
    assert!(parse_cc(b"0|CC0|3|f\n", "c")
        .unwrap_err()
        .element
        .contains("line 1"));
    assert!(parse_cc(b"#f|g\n0|CC1|3|f\n", "c").is_err());
    assert!(parse_cc(b"#f|g\n0|CC0|3\n", "c").is_err());
    assert!(parse_cc(b"#f\n", "c").is_err());
    assert!(parse_bbc(b"#f|g\n0|BBC0|x\n", "b").is_err());
    assert!(parse_fc(b"#f|g\n0|x\n", "f").is_err());
    assert!(parse_cfg(b"{\"csi_cfg\":99,\"name\":\"f\"}\n", "g")
        .unwrap_err()
        .reason
        .contains("version 99"));
    assert!(parse_cfg(b"{not json\n", "g").is_err());
    assert!(parse_cfg(b"{\"name\":\"f\"}\n", "g").is_err());
}

#[test]
fn cfg_round_trip_and_program_graph() {
    let line = r#"{"csi_cfg":1,"name":"main","file":"a.c","path_traced":true,"nodes":[{"kind":"entry"},{"kind":"exit"},{"kind":"expression","block":0,"pt_block":0,"positions":[[3,5]],"call":{"callee":"f"},"labels":["CC0"],"uses":["x"]},{"kind":"expression","block":0,"pt_block":0,"positions":[[4,1]],"call":{"indirect":true,"candidates":["f","g"]}}],"edges":[[0,2],[2,3],[3,1]]}
{"csi_cfg":1,"name":"f","file":"a.c","static":true,"path_traced":false,"nodes":[{"kind":"entry"},{"kind":"exit"}],"edges":[[0,1]]}
{"csi_cfg":1,"name":"g","file":"b.c","path_traced":false,"nodes":[{"kind":"entry"},{"kind":"exit"}],"edges":[[0,1]]}
"#;
    let fs: Vec<CfgFunction> = parse_cfg(line.as_bytes(), "cfg").unwrap();
    assert_eq!(fs.len(), 3);
    let again: String = fs.iter().map(|f| f.to_line()).collect();
    assert_eq!(parse_cfg(again.as_bytes(), "cfg").unwrap(), fs);
    let g = csi_model::sections::cfg_to_program_graph(&fs, "cfg").unwrap();
    let call = g.node_by_ext_id("main#2").unwrap();
    assert_eq!(g.callees(call), &[g.function_by_name("f").unwrap()]);
    let ind = g.node_by_ext_id("main#3").unwrap();
    assert_eq!(g.callees(ind).len(), 2);
    assert_eq!(g.node(call).positions[0].column, 5);
    assert_eq!(
        g.program_entry,
        Some(g.function(g.function_by_name("main").unwrap()).entry)
    );
    // Edges out of range are errors.
    let bad = r#"{"csi_cfg":1,"name":"m","path_traced":false,"nodes":[{"kind":"entry"},{"kind":"exit"}],"edges":[[0,7]]}"#;
    assert!(parse_cfg(bad.as_bytes(), "cfg")
        .unwrap_err()
        .reason
        .contains("does not exist"));
}
