//! A client connection's id: the server's name for one accepted socket (net/ numbers them),
//! under which the core keeps the connection's record, watches, held reads and output.

pub type ConnId = u64;
