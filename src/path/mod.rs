//! ZooKeeper's path rules (PathUtils.validatePath) and path helpers; [`trie`] finds the
//! stored paths covering a path in one pass.
//!
//! Owns: what a valid path is, and path splitting. May not touch: anything of the crate (a
//! leaf): the tree and the watch tables use it.

pub mod trie;

/// Whether `path` is a valid znode path: starts with `/`, no trailing `/` (except `/` itself),
/// no empty, `.` or `..` component, and no character ZooKeeper forbids.
pub fn is_valid(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    if rest.ends_with('/') {
        return false;
    }
    rest.split('/')
        .all(|c| !c.is_empty() && c != "." && c != ".." && c.chars().all(allowed_char))
}

/// ZooKeeper checks UTF-16 code units: characters outside the BMP arrive as surrogates
/// (U+D800..U+DFFF), which it forbids, so they are forbidden here too.
fn allowed_char(c: char) -> bool {
    let u = c as u32;
    !(u <= 0x1f || (0x7f..=0x9f).contains(&u) || (0xd800..=0xf8ff).contains(&u) || u >= 0xfff0)
}

/// The parent of a path as ZooKeeper derives it: everything before the last `/`
/// (`/` when that is the first character). `None` when the path has no `/`.
pub fn parent(path: &str) -> Option<&str> {
    let i = path.rfind('/')?;
    Some(if i == 0 { "/" } else { path.get(..i)? })
}

/// The last component (after the last `/`).
pub fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => path.get(i + 1..).unwrap_or(""),
        None => path,
    }
}

/// Nodes that can never be deleted (ZKDatabase.isSpecialPath).
pub fn is_special(path: &str) -> bool {
    matches!(
        path,
        "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
    )
}

/// `parent` + `/` + `name`.
pub fn join(parent: &str, name: &str) -> String {
    let mut s = String::with_capacity(parent.len() + 1 + name.len());
    s.push_str(parent);
    if parent != "/" {
        s.push('/');
    }
    s.push_str(name);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_like_zookeeper() {
        for ok in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/...",
            "/a/.b",
            "/zookeeper",
            "/ü",
            "/a b",
        ] {
            assert!(is_valid(ok), "{ok:?} should be valid");
        }
        for bad in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/./b",
            "/a/../b",
            "/a\0",
            "/a\u{1}",
            "/\u{7f}",
            "/\u{e000}",
            "/\u{fff0}",
            "/\u{1f600}",
        ] {
            assert!(!is_valid(bad), "{bad:?} should be invalid");
        }
    }

    #[test]
    fn parents_and_names() {
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), Some("/"));
        assert_eq!(parent("a"), None);
        assert_eq!(name("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }
}
