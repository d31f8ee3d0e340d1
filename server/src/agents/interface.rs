//! One interface for every kind of agent a session can work with: the
//! built-in tool loop and any ACP agent are the same to the rest of the hub,
//! as Zed's native agent is one more `AgentConnection`. The catalog
//! (`crate::agents`) makes them; the runtime reaches the session's through
//! its port and never names a kind.

use std::sync::Arc;

use futures::future::BoxFuture;
use protocol::api::AgentModes;

use super::port::HubPort;
use super::{AgentError, SessionRuntime, Start};

pub trait Agent: Send + Sync {
    /// Starts or resumes a turn: a prompt, a decision on a waiting call, an
    /// answer. Returns the last seq before the turn's first event.
    fn begin(&self, hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, AgentError>;

    /// Decides several waiting calls at once (the inbox's batch), each as its
    /// own decision would be; the turn resumes once. Returns each decision's
    /// result, in order, and the last seq before the turn's first event when
    /// one started.
    fn decide_many(
        &self,
        hub: &Arc<dyn HubPort>,
        runtime: &Arc<SessionRuntime>,
        decisions: Vec<super::BatchItem>,
    ) -> (Vec<Result<(), AgentError>>, Option<u64>);

    /// Stops the running or waiting turn (the Stop button). Returns the last
    /// seq before the turn's last events.
    fn cancel<'a>(
        &'a self,
        hub: &'a Arc<dyn HubPort>,
        runtime: &'a Arc<SessionRuntime>,
    ) -> BoxFuture<'a, Result<u64, AgentError>>;

    /// Stops a running turn only (shutdown): what waits for the user is kept
    /// where the agent can take it up again after a restart.
    fn stop_running(&self, hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>);

    /// Puts the session in one of the agent's modes; answers the modes as they now are.
    fn set_mode<'a>(
        &'a self,
        runtime: &'a SessionRuntime,
        mode_id: String,
    ) -> BoxFuture<'a, Result<AgentModes, AgentError>>;
}
