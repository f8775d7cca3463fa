//! Parser for proto-spec/spec/*.jute: records (fields in wire order) and int enums.

#[derive(Debug, Clone)]
pub enum Ty {
    Int,
    Long,
    Bool,
    Byte,
    Buffer,
    UString,
    Vector(Box<Ty>),
    Record(String),
}

#[derive(Debug)]
pub struct Field {
    pub doc: Vec<String>,
    pub name: String,
    pub ty: Ty,
    pub optional: bool,
}

#[derive(Debug)]
pub struct Record {
    pub doc: Vec<String>,
    pub name: String,
    pub fields: Vec<Field>,
}

#[derive(Debug)]
pub struct Enum {
    pub doc: Vec<String>,
    pub name: String,
    pub variants: Vec<(String, i64)>,
}

#[derive(Debug, Default)]
pub struct Spec {
    pub records: Vec<Record>,
    pub enums: Vec<Enum>,
}

/// Tokens: identifiers/numbers, single punctuation, `<`/`>`, and `///` doc lines.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
    Doc(String),
}

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, String> {
    let mut out = Vec::new();
    for (lineno, line) in src.lines().enumerate() {
        let lineno = lineno + 1;
        let trimmed = line.trim_start();
        if let Some(doc) = trimmed.strip_prefix("///") {
            out.push((Tok::Doc(doc.trim().to_string()), lineno));
            continue;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut chars = code.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c.is_whitespace() {
                continue;
            }
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '_' {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push((Tok::Word(code[i..end].to_string()), lineno));
            } else if "{};=<>".contains(c) {
                out.push((Tok::Punct(c), lineno));
            } else {
                return Err(format!("line {lineno}: unexpected character {c:?}"));
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser {
    fn line(&self) -> usize {
        self.toks.get(self.pos).map(|t| t.1).unwrap_or(0)
    }
    fn next(&mut self) -> Result<Tok, String> {
        let t = self
            .toks
            .get(self.pos)
            .map(|t| t.0.clone())
            .ok_or("unexpected end of spec")?;
        self.pos += 1;
        Ok(t)
    }
    fn docs(&mut self) -> Vec<String> {
        let mut d = Vec::new();
        while let Some((Tok::Doc(s), _)) = self.toks.get(self.pos) {
            d.push(s.clone());
            self.pos += 1;
        }
        d
    }
    fn word(&mut self) -> Result<String, String> {
        let line = self.line();
        match self.next()? {
            Tok::Word(w) => Ok(w),
            t => Err(format!("line {line}: expected a name, found {t:?}")),
        }
    }
    fn punct(&mut self, c: char) -> Result<(), String> {
        let line = self.line();
        match self.next()? {
            Tok::Punct(p) if p == c => Ok(()),
            t => Err(format!("line {line}: expected {c:?}, found {t:?}")),
        }
    }
    fn peek_punct(&self, c: char) -> bool {
        matches!(self.toks.get(self.pos), Some((Tok::Punct(p), _)) if *p == c)
    }
    fn ty(&mut self) -> Result<Ty, String> {
        let w = self.word()?;
        Ok(match w.as_str() {
            "int" => Ty::Int,
            "long" => Ty::Long,
            "boolean" => Ty::Bool,
            "byte" => Ty::Byte,
            "buffer" => Ty::Buffer,
            "ustring" => Ty::UString,
            "vector" => {
                self.punct('<')?;
                let inner = self.ty()?;
                self.punct('>')?;
                Ty::Vector(Box::new(inner))
            }
            _ => Ty::Record(w),
        })
    }
}

fn parse_int(s: &str) -> Result<i64, String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let v = match body.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16),
        None => body.parse::<i64>(),
    }
    .map_err(|e| format!("bad number {s:?}: {e}"))?;
    Ok(if neg { -v } else { v })
}

pub fn parse(src: &str) -> Result<Spec, String> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
    };
    let mut spec = Spec::default();
    loop {
        let doc = p.docs();
        if p.pos >= p.toks.len() {
            break;
        }
        let line = p.line();
        match p.word()?.as_str() {
            "record" => {
                let name = p.word()?;
                p.punct('{')?;
                let mut fields: Vec<Field> = Vec::new();
                loop {
                    let fdoc = p.docs();
                    if p.peek_punct('}') {
                        p.next()?;
                        break;
                    }
                    let optional =
                        matches!(p.toks.get(p.pos), Some((Tok::Word(w), _)) if w == "optional");
                    if optional {
                        p.next()?;
                    }
                    if fields.last().is_some_and(|f| f.optional) {
                        return Err(format!(
                            "line {}: only the last field may be optional",
                            p.line()
                        ));
                    }
                    let ty = p.ty()?;
                    let fname = p.word()?;
                    p.punct(';')?;
                    fields.push(Field {
                        doc: fdoc,
                        name: fname,
                        ty,
                        optional,
                    });
                }
                spec.records.push(Record { doc, name, fields });
            }
            "enum" => {
                let name = p.word()?;
                p.punct('{')?;
                let mut variants = Vec::new();
                loop {
                    if p.peek_punct('}') {
                        p.next()?;
                        break;
                    }
                    let v = p.word()?;
                    p.punct('=')?;
                    let n = parse_int(&p.word()?)?;
                    p.punct(';')?;
                    variants.push((v, n));
                }
                spec.enums.push(Enum {
                    doc,
                    name,
                    variants,
                });
            }
            other => {
                return Err(format!(
                    "line {line}: expected record or enum, found {other:?}"
                ))
            }
        }
    }
    // Every nested record must be declared.
    for r in &spec.records {
        for f in &r.fields {
            let mut t = &f.ty;
            while let Ty::Vector(inner) = t {
                t = inner;
            }
            if let Ty::Record(n) = t {
                if !spec.records.iter().any(|r| &r.name == n) {
                    return Err(format!(
                        "record {}: field {} uses undeclared record {n}",
                        r.name, f.name
                    ));
                }
            }
        }
    }
    Ok(spec)
}
