//! Request builders for [`crate::Client::multi`] (and for anyone building requests by hand):
//! the same requests the client's own methods send, with the open ACL.

use crate::error::Error;
use bytes::Bytes;
use palisade_proto::{
    CheckVersionRequest, CreateMode, CreateRequest, DeleteRequest, Id, JStr, Request,
    SetDataRequest, ACL,
};

/// `world:anyone` with every permission: the ACL every node this client creates gets.
pub fn open_acl() -> Vec<ACL> {
    vec![ACL {
        perms: 31,
        id: Id {
            scheme: JStr::from("world"),
            id: JStr::from("anyone"),
        },
    }]
}

fn version(v: Option<i32>) -> i32 {
    v.unwrap_or(-1)
}

/// A create (opcode create; a container becomes createContainer, as ZooKeeper's client does).
/// TTL modes need a TTL and are refused here.
pub fn create(path: &str, data: &[u8], mode: CreateMode) -> Result<Request, Error> {
    let body = CreateRequest {
        path: JStr::from(path),
        data: Some(Bytes::copy_from_slice(data)),
        acl: Some(open_acl()),
        flags: mode.code(),
    };
    match mode {
        CreateMode::Container => Ok(Request::CreateContainer(body)),
        CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl => {
            Err(Error::BadArgument(format!("{} needs a TTL", mode.name())))
        }
        _ => Ok(Request::Create(body)),
    }
}

/// The same as [`create`] with opcode create2 (the reply carries the new node's Stat).
pub fn create2(path: &str, data: &[u8], mode: CreateMode) -> Result<Request, Error> {
    match create(path, data, mode)? {
        Request::Create(body) => Ok(Request::Create2(body)),
        other => Ok(other),
    }
}

/// delete; `None` matches any version.
pub fn delete(path: &str, v: Option<i32>) -> Request {
    Request::Delete(DeleteRequest {
        path: JStr::from(path),
        version: version(v),
    })
}

/// setData; `None` matches any version.
pub fn set_data(path: &str, data: &[u8], v: Option<i32>) -> Request {
    Request::SetData(SetDataRequest {
        path: JStr::from(path),
        data: Some(Bytes::copy_from_slice(data)),
        version: version(v),
    })
}

/// check (inside multi): the node must exist, and have this version unless `None`. A multi
/// starting with `check(lock node, None)` applies only while the lock node exists: the fenced
/// write of [`crate::lock::Guard::fenced_set_data`].
pub fn check(path: &str, v: Option<i32>) -> Request {
    Request::Check(CheckVersionRequest {
        path: JStr::from(path),
        version: version(v),
    })
}
