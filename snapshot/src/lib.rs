//! Palisade's fuzzy snapshots. Not implemented yet: the durability issue (#5) builds it.
