//! Palisade's write-ahead log. Not implemented yet: the durability issue (#5) builds it.
//! Until then the server logs through an in-memory sink behind the same trait (src/log.rs).
