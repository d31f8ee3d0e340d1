//! The agents a session works with, and the runtime they drive. `catalog`:
//! which agents a session can pick; `builtin` (the hub's own tool loop) and
//! `acp` (Agent Client Protocol agents) both implement [`Agent`] and reach
//! the hub only through [`port::HubPort`]; `runtime`: a session's log and
//! state, driven by its [`crate::session::Machine`]; `gate`: the one gate a
//! call passes when it starts; `trail`: what the audit trail records.

pub mod acp;
pub mod builtin;
pub mod catalog;
pub mod error;
pub(crate) mod gate;
mod interface;
pub mod live;
pub mod log;
pub mod port;
pub mod protected;
mod runtime;
pub(crate) mod trail;
mod unreadable;

pub use error::AgentError;
pub use interface::Agent;
pub use runtime::*;
pub use unreadable::STATE_UNREADABLE;
