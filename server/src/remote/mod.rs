//! The remote listener (`--remote`): HTTPS for paired devices only.

/// The paired device a request on the remote listener comes from, put in the
/// request's extensions by the remote gate; absent on the loopback listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedDevice {
    pub id: String,
    pub name: String,
}
