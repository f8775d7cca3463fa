//! The JAAS login configuration file ZooKeeper's users already have (the file named by
//! `-Djava.security.auth.login.config`), in the syntax of the JDK's ConfigFile:
//!
//! ```text
//! Server {
//!     org.apache.zookeeper.server.auth.DigestLoginModule required
//!     user_alice="alice-secret"
//!     user_bob="bob-secret";
//! };
//! ```
//!
//! Sections of login modules, each a class name, a control flag and `key=value` options
//! ending in `;`; values quoted with `"` or `'` (backslash escapes) or bare words; `//` and
//! `/* */` comments. The JDK's `${property}` expansion in values is not done: a value holding
//! `${` is refused rather than taken literally.

/// One login module line of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub class: String,
    pub flag: String,
    /// In file order; a repeated key's last value wins, as in the JDK's option map.
    pub options: Vec<(String, String)>,
}

/// A named section (`Server`, `Client`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub modules: Vec<Module>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Punct(char),
}

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, String> {
    let mut out = Vec::new();
    let mut line = 1usize;
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '/' if it.peek() == Some(&'/') => {
                for c in it.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '/' if it.peek() == Some(&'*') => {
                it.next();
                let mut prev = ' ';
                let mut closed = false;
                for c in it.by_ref() {
                    if c == '\n' {
                        line += 1;
                    }
                    if prev == '*' && c == '/' {
                        closed = true;
                        break;
                    }
                    prev = c;
                }
                if !closed {
                    return Err(format!("line {line}: unterminated /* comment"));
                }
            }
            '{' | '}' | ';' | '=' => out.push((Tok::Punct(c), line)),
            '"' | '\'' => {
                let mut s = String::new();
                loop {
                    match it.next() {
                        None | Some('\n') => {
                            return Err(format!("line {line}: unterminated quoted string"))
                        }
                        Some(q) if q == c => break,
                        Some('\\') => match it.next() {
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some('r') => s.push('\r'),
                            Some(e) if e != '\n' => s.push(e),
                            _ => return Err(format!("line {line}: unterminated quoted string")),
                        },
                        Some(ch) => s.push(ch),
                    }
                }
                out.push((Tok::Quoted(s), line));
            }
            c => {
                let mut s = String::from(c);
                while let Some(&n) = it.peek() {
                    if n.is_whitespace() || "{};=\"'".contains(n) {
                        break;
                    }
                    s.push(n);
                    it.next();
                }
                out.push((Tok::Word(s), line));
            }
        }
    }
    Ok(out)
}

/// Parses the whole file; errors name the line.
pub fn parse(text: &str) -> Result<Vec<Section>, String> {
    let mut p = Parser {
        toks: lex(text)?.into_iter(),
        last_line: 1,
    };
    let mut sections: Vec<Section> = Vec::new();
    loop {
        let (name, line) = match p.next("a section name") {
            Err(_) => break,
            Ok((Tok::Word(w) | Tok::Quoted(w), l)) => (w, l),
            Ok((t, l)) => return Err(format!("line {l}: section name expected, {t:?} found")),
        };
        if sections.iter().any(|s| s.name == name) {
            return Err(format!("line {line}: section {name:?} given twice"));
        }
        let modules = p.section_body()?;
        sections.push(Section { name, modules });
    }
    Ok(sections)
}

/// The tokens of a file, and the line of the last one taken (for an unexpected end).
struct Parser {
    toks: std::vec::IntoIter<(Tok, usize)>,
    last_line: usize,
}

impl Parser {
    /// The next token, or an error saying `what` was expected at the end of the file.
    fn next(&mut self, what: &str) -> Result<(Tok, usize), String> {
        let last_line = &mut self.last_line;
        self.toks
            .next()
            .map(|(t, l)| {
                *last_line = l;
                (t, l)
            })
            .ok_or_else(|| format!("line {last_line}: {what} expected, end of file found"))
    }

    /// `{ module flag options ; ... };` after a section's name.
    fn section_body(&mut self) -> Result<Vec<Module>, String> {
        match self.next("'{'")? {
            (Tok::Punct('{'), _) => {}
            (t, l) => return Err(format!("line {l}: '{{' expected, {t:?} found")),
        }
        let mut modules = Vec::new();
        loop {
            let class = match self.next("a login module or '}'")? {
                (Tok::Punct('}'), _) => break,
                (Tok::Word(w), _) => w,
                (t, l) => {
                    return Err(format!(
                        "line {l}: login module class expected, {t:?} found"
                    ))
                }
            };
            let flag = self.control_flag()?;
            let options = self.options()?;
            modules.push(Module {
                class,
                flag,
                options,
            });
        }
        match self.next("';' after '}'")? {
            (Tok::Punct(';'), _) => Ok(modules),
            (t, l) => Err(format!("line {l}: ';' expected after '}}', {t:?} found")),
        }
    }

    /// A login module's control flag, lower case.
    fn control_flag(&mut self) -> Result<String, String> {
        match self.next("a control flag")? {
            (Tok::Word(w), l) => {
                let f = w.to_ascii_lowercase();
                if !["required", "requisite", "sufficient", "optional"].contains(&f.as_str()) {
                    return Err(format!("line {l}: invalid control flag {w:?}"));
                }
                Ok(f)
            }
            (t, l) => Err(format!("line {l}: control flag expected, {t:?} found")),
        }
    }

    /// A login module's `key=value` options, up to its ';'.
    fn options(&mut self) -> Result<Vec<(String, String)>, String> {
        let mut options = Vec::new();
        loop {
            let key = match self.next("an option or ';'")? {
                (Tok::Punct(';'), _) => break,
                (Tok::Word(w), _) => w,
                (t, l) => return Err(format!("line {l}: option name expected, {t:?} found")),
            };
            match self.next("'='")? {
                (Tok::Punct('='), _) => {}
                (t, l) => return Err(format!("line {l}: '=' expected after {key}, {t:?} found")),
            }
            let value = match self.next("an option value")? {
                (Tok::Word(w) | Tok::Quoted(w), l) => {
                    if w.contains("${") {
                        return Err(format!(
                            "line {l}: option {key}: ${{property}} expansion is not supported"
                        ));
                    }
                    w
                }
                (t, l) => return Err(format!("line {l}: value expected for {key}, {t:?} found")),
            };
            options.push((key, value));
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zookeeper_server_and_client_sections() {
        let text = r#"
// the server's users
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"   /* the super user */
       user_bob='bob\'s "pw"';
};
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule Required
       username="bob"
       password="bobsecret";
};"#;
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "Server");
        assert_eq!(
            s[0].modules[0].class,
            "org.apache.zookeeper.server.auth.DigestLoginModule"
        );
        assert_eq!(
            s[0].modules[0].options,
            vec![
                ("user_super".to_string(), "adminsecret".to_string()),
                ("user_bob".to_string(), "bob's \"pw\"".to_string())
            ]
        );
        assert_eq!(s[1].modules[0].flag, "required");
    }

    #[test]
    fn errors_name_the_line() {
        for (text, needle) in [
            ("Server {\n m required a=\"x\"\n", "end of file"),
            ("Server {\n m maybe a=1; };", "line 2: invalid control flag"),
            ("Server {\n m required a 1; };", "line 2: '=' expected"),
            (
                "Server {\n m required a=\"open\n\"; };",
                "line 2: unterminated",
            ),
            (
                "Server { m required; };\nServer { m required; };",
                "line 2: section \"Server\" given twice",
            ),
            ("Server { m required p=\"${user.home}\"; };", "expansion"),
            ("Server { m required; }", "';' after '}'"),
            ("/* open", "unterminated /*"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn empty_file_has_no_sections() {
        assert_eq!(parse("  // nothing\n").unwrap(), vec![]);
    }
}
