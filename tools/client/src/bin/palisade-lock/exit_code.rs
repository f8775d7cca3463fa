//! palisade-lock's exit statuses. Values from sysexits.h where one fits, so they stay clear of
//! the small codes commands use; otherwise the command's own status is passed through.

/// Bad usage (sysexits EX_USAGE); also bad values (a lock path not starting with "/").
pub const USAGE: i32 = 64;
/// The server could not be reached, or the session failed before the lock was granted
/// (EX_UNAVAILABLE).
pub const UNAVAILABLE: i32 = 69;
/// The lock was not acquired within --timeout (EX_TEMPFAIL: try again later). The command did
/// not run.
pub const NOT_ACQUIRED: i32 = 75;
/// The lock was (or may have been) lost while the command ran: the command was terminated, or
/// it ended after the loss. Its results must not be trusted without the fencing token.
pub const LOST: i32 = 76;
/// The command could not be executed / was not found (as shells report it).
pub const CANNOT_EXECUTE: i32 = 126;
pub const NOT_FOUND: i32 = 127;

pub const HELP: &str = "\
Environment of COMMAND:
  PALISADE_FENCE_TOKEN  the fencing token: the lock node's czxid (decimal); pass it with every
                        write and have the resource reject tokens lower than the highest seen
  PALISADE_LOCK_PATH    the lock path
  PALISADE_LOCK_NODE    this holder's lock node

Exit status:
  the command's own status (128+N if it died of signal N) when it ran with the lock held
  64   bad usage
  69   server unreachable, or the session failed before the lock was granted
  75   lock not acquired within --timeout (the command did not run)
  76   lock lost while the command ran (the command got SIGTERM, then SIGKILL after --grace)
  126  the command could not be executed; 127 not found
  128+N  palisade-lock got signal N (SIGINT, SIGTERM, SIGHUP) before the command started";
