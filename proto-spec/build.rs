//! Generates the Rust records and enums from spec/zookeeper.jute (the one source of truth).

#[path = "build/parse.rs"]
mod parse;

use parse::{Record, Spec, Ty};
use std::fmt::Write as _;
use std::{env, fs, path::PathBuf};

fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    match out.as_str() {
        "type" => "type_".into(),
        _ => out,
    }
}

fn camel(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

fn rust_ty(t: &Ty) -> String {
    match t {
        Ty::Int => "i32".into(),
        Ty::Long => "i64".into(),
        Ty::Bool => "bool".into(),
        Ty::Byte => "u8".into(),
        Ty::Buffer => "Option<Bytes>".into(),
        Ty::UString => "JStr".into(),
        Ty::Vector(inner) => format!("Option<Vec<{}>>", rust_ty(inner)),
        Ty::Record(n) => n.clone(),
    }
}

fn jute_ty(t: &Ty) -> String {
    match t {
        Ty::Int => "int".into(),
        Ty::Long => "long".into(),
        Ty::Bool => "boolean".into(),
        Ty::Byte => "byte".into(),
        Ty::Buffer => "buffer".into(),
        Ty::UString => "ustring".into(),
        Ty::Vector(inner) => format!("vector<{}>", jute_ty(inner)),
        Ty::Record(n) => n.clone(),
    }
}

fn read_expr(t: &Ty) -> String {
    match t {
        Ty::Int => "r.int()?".into(),
        Ty::Long => "r.long()?".into(),
        Ty::Bool => "r.boolean()?".into(),
        Ty::Byte => "r.byte()?".into(),
        Ty::Buffer => "r.buffer()?".into(),
        Ty::UString => "r.ustring()?".into(),
        Ty::Vector(inner) => format!("r.vector(|r| Ok({}))?", read_expr(inner)),
        Ty::Record(n) => format!("{n}::read(r)?"),
    }
}

/// A statement writing `v` (an expression of type `&T`) to `w`.
fn write_stmt(t: &Ty, v: &str, depth: usize) -> String {
    match t {
        Ty::Int => format!("w.put_i32(*({v}));"),
        Ty::Long => format!("w.put_i64(*({v}));"),
        Ty::Bool => format!("w.put_u8(u8::from(*({v})));"),
        Ty::Byte => format!("w.put_u8(*({v}));"),
        Ty::Buffer => format!("write_buffer(w, ({v}).as_deref());"),
        Ty::UString => format!("({v}).write(w);"),
        Ty::Vector(inner) => {
            let e = format!("e{depth}");
            format!(
                "write_vector(w, ({v}).as_deref(), |w, {e}| {{ {} }});",
                write_stmt(inner, &e, depth + 1)
            )
        }
        Ty::Record(_) => format!("({v}).write(w);"),
    }
}

/// An expression: the encoded size of `v` (of type `&T`).
fn len_expr(t: &Ty, v: &str, depth: usize) -> String {
    match t {
        Ty::Int => "4".into(),
        Ty::Long => "8".into(),
        Ty::Bool => "1".into(),
        Ty::Byte => "1".into(),
        Ty::Buffer => format!("4 + {v}.as_ref().map_or(0, |b| b.len())"),
        Ty::UString => format!("{v}.wire_len()"),
        Ty::Vector(inner) => {
            let e = format!("e{depth}");
            format!(
                "4 + {v}.as_ref().map_or(0, |v| v.iter().map(|{e}| {}).sum::<usize>())",
                len_expr(inner, &e, depth + 1)
            )
        }
        Ty::Record(_) => format!("{v}.wire_len()"),
    }
}

fn strategy(t: &Ty) -> String {
    match t {
        Ty::Int => "any::<i32>().boxed()".into(),
        Ty::Long => "any::<i64>().boxed()".into(),
        Ty::Bool => "any::<bool>().boxed()".into(),
        Ty::Byte => "any::<u8>().boxed()".into(),
        Ty::Buffer => "arb_buffer()".into(),
        Ty::UString => "arb_jstr()".into(),
        Ty::Vector(inner) => format!(
            "proptest::option::of(proptest::collection::vec({}, 0..6)).boxed()",
            strategy(inner)
        ),
        Ty::Record(n) => format!("arb_{}()", snake(n)),
    }
}

fn emit_record(out: &mut String, r: &Record) {
    for d in &r.doc {
        let _ = writeln!(out, "/// {d}");
    }
    let _ = writeln!(out, "///\n/// Wire order:");
    for f in &r.fields {
        let opt = if f.optional { "optional " } else { "" };
        let _ = writeln!(out, "/// `{opt}{} {}`", jute_ty(&f.ty), f.name);
    }
    let _ = writeln!(out, "#[allow(clippy::upper_case_acronyms)]");
    let _ = writeln!(
        out,
        "#[derive(Debug, Clone, PartialEq, Eq, Default)]\npub struct {} {{",
        r.name
    );
    for f in &r.fields {
        for d in &f.doc {
            let _ = writeln!(out, "    /// {d}");
        }
        let ty = rust_ty(&f.ty);
        let ty = if f.optional {
            format!("Option<{ty}>")
        } else {
            ty
        };
        let _ = writeln!(out, "    pub {}: {ty},", snake(&f.name));
    }
    let _ = writeln!(out, "}}\n");

    let _ = writeln!(out, "impl Record for {} {{", r.name);
    let _ = writeln!(out, "    const NAME: &'static str = {:?};", r.name);
    let _ = writeln!(
        out,
        "    fn read(r: &mut Reader) -> Result<Self, DecodeError> {{"
    );
    let _ = writeln!(out, "        Ok(Self {{");
    for f in &r.fields {
        let e = read_expr(&f.ty);
        if f.optional {
            let _ = writeln!(
                out,
                "            {}: if r.is_empty() {{ None }} else {{ Some({e}) }},",
                snake(&f.name)
            );
        } else {
            let _ = writeln!(out, "            {}: {e},", snake(&f.name));
        }
    }
    let _ = writeln!(out, "        }})\n    }}");
    let _ = writeln!(out, "    fn write(&self, w: &mut BytesMut) {{");
    for f in &r.fields {
        let n = snake(&f.name);
        if f.optional {
            let _ = writeln!(
                out,
                "        if let Some(v) = &self.{n} {{ {} }}",
                write_stmt(&f.ty, "v", 0)
            );
        } else {
            let _ = writeln!(
                out,
                "        {}",
                write_stmt(&f.ty, &format!("&self.{n}"), 0)
            );
        }
    }
    let _ = writeln!(out, "    }}");
    let _ = writeln!(
        out,
        "    #[allow(unused_variables)]\n    fn wire_len(&self) -> usize {{"
    );
    let mut parts = Vec::new();
    for f in &r.fields {
        let n = snake(&f.name);
        if f.optional {
            parts.push(format!(
                "self.{n}.as_ref().map_or(0, |v| {})",
                len_expr(&f.ty, "v", 0)
            ));
        } else {
            parts.push(format!("({})", len_expr(&f.ty, &format!("(&self.{n})"), 0)));
        }
    }
    if parts.is_empty() {
        parts.push("0".into());
    }
    let _ = writeln!(out, "        {}\n    }}\n}}\n", parts.join(" + "));
}

fn emit(spec: &Spec) -> (String, String) {
    let mut out = String::from(
        "// @generated by proto-spec/build.rs from spec/zookeeper.jute. Do not edit.\n\n",
    );
    for r in &spec.records {
        emit_record(&mut out, r);
    }
    for e in &spec.enums {
        for d in &e.doc {
            let _ = writeln!(out, "/// {d}");
        }
        let _ = writeln!(out, "#[allow(clippy::upper_case_acronyms)]");
        let _ = writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n#[repr(i32)]\npub enum {} {{", e.name);
        for (v, n) in &e.variants {
            let _ = writeln!(out, "    /// `{v} = {n}`\n    {} = {n},", camel(v));
        }
        let _ = writeln!(out, "}}\n");
        let _ = writeln!(out, "impl {} {{", e.name);
        let _ = writeln!(
            out,
            "    /// Every value, in spec order.\n    pub const ALL: &'static [Self] = &[{}];",
            e.variants
                .iter()
                .map(|(v, _)| format!("Self::{}", camel(v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(out, "    /// The value for a wire int, if the spec defines one.\n    pub const fn from_i32(v: i32) -> Option<Self> {{\n        match v {{");
        for (v, n) in &e.variants {
            let _ = writeln!(out, "            {n} => Some(Self::{}),", camel(v));
        }
        let _ = writeln!(out, "            _ => None,\n        }}\n    }}");
        let _ = writeln!(
            out,
            "    /// The wire int.\n    pub const fn code(self) -> i32 {{ self as i32 }}"
        );
        let _ = writeln!(out, "    /// The name the spec (and ZooKeeper) uses.\n    pub const fn name(self) -> &'static str {{\n        match self {{");
        for (v, _) in &e.variants {
            let _ = writeln!(out, "            Self::{} => {v:?},", camel(v));
        }
        let _ = writeln!(out, "        }}\n    }}\n}}\n");
    }
    // A table of every record's fields, so tests and tools can walk the spec.
    let _ = writeln!(out, "/// Every record in the spec: name and (jute type, field name) in wire order.\npub const SPEC_RECORDS: &[(&str, &[(&str, &str)])] = &[");
    for r in &spec.records {
        let fields: Vec<String> = r
            .fields
            .iter()
            .map(|f| {
                format!(
                    "({:?}, {:?})",
                    format!(
                        "{}{}",
                        if f.optional { "optional " } else { "" },
                        jute_ty(&f.ty)
                    ),
                    f.name
                )
            })
            .collect();
        let _ = writeln!(out, "    ({:?}, &[{}]),", r.name, fields.join(", "));
    }
    let _ = writeln!(out, "];");

    let mut strat = String::from(
        "// @generated by proto-spec/build.rs: proptest strategies for every record.\n\n",
    );
    for r in &spec.records {
        let fields: Vec<String> = r
            .fields
            .iter()
            .map(|f| {
                let s = strategy(&f.ty);
                if f.optional {
                    format!("proptest::option::of({s}).boxed()")
                } else {
                    s
                }
            })
            .collect();
        let names: Vec<String> = r.fields.iter().map(|f| snake(&f.name)).collect();
        let _ = writeln!(
            strat,
            "pub fn arb_{}() -> BoxedStrategy<{}> {{\n    ({},).prop_map(|({},)| {} {{ {} }}).boxed()\n}}\n",
            snake(&r.name),
            r.name,
            fields.join(", "),
            names.join(", "),
            r.name,
            names.join(", ")
        );
    }
    let _ = writeln!(strat, "proptest! {{");
    for r in &spec.records {
        let n = snake(&r.name);
        let _ = writeln!(
            strat,
            "    #[test]\n    fn roundtrip_{n}(v in arb_{n}()) {{ check_roundtrip(&v)?; }}"
        );
    }
    let _ = writeln!(strat, "}}");
    (out, strat)
}

fn main() {
    let spec_path = "spec/zookeeper.jute";
    println!("cargo:rerun-if-changed={spec_path}");
    println!("cargo:rerun-if-changed=build/parse.rs");
    let src = fs::read_to_string(spec_path).unwrap_or_else(|e| panic!("reading {spec_path}: {e}"));
    let spec = parse::parse(&src).unwrap_or_else(|e| panic!("{spec_path}: {e}"));
    let (records, strategies) = emit(&spec);
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR is set by cargo"));
    fs::write(out.join("records.rs"), records).expect("write records.rs");
    fs::write(out.join("strategies.rs"), strategies).expect("write strategies.rs");
}
