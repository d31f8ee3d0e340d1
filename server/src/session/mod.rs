//! A session's turns as a machine without IO ([`Machine`]), and what a
//! restart makes of them ([`recover`]). The runtime owns one machine per
//! session, under the session's lock; the status the pages see and the phase
//! saved with the agent's state both come from it, in one write.

mod machine;
mod recovery;
#[cfg(test)]
mod tests;

pub use machine::{Machine, Occupied, Phase, Refusal, Starting, Status, Stop, TurnEnd};
pub use recovery::{recover, Recovery, Tail};
