//! The compare-and-set register (Jepsen's `cas-register`) as a sequential specification for
//! stateright's linearizability tester: read, write, and a cas that succeeds only when the
//! register holds the expected value. A key's node may not exist yet: the register starts
//! empty (`None`), which only a read returns.

use stateright::semantics::SequentialSpec;

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct CasRegister(pub Option<i64>);

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum Op {
    Read,
    Write(i64),
    Cas(i64, i64),
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum Ret {
    Read(Option<i64>),
    Write,
    Cas(bool),
}

impl SequentialSpec for CasRegister {
    type Op = Op;
    type Ret = Ret;

    fn invoke(&mut self, op: &Op) -> Ret {
        match *op {
            Op::Read => Ret::Read(self.0),
            Op::Write(v) => {
                self.0 = Some(v);
                Ret::Write
            }
            Op::Cas(old, new) => {
                if self.0 == Some(old) {
                    self.0 = Some(new);
                    Ret::Cas(true)
                } else {
                    Ret::Cas(false)
                }
            }
        }
    }
}
