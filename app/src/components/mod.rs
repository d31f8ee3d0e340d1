pub mod approval_card;
pub mod chat;
pub mod folders;
pub mod header;
pub mod hub_page;
pub mod inbox;
pub mod tool_call;
pub mod updates;
