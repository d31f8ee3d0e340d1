pub mod folders;
pub mod header;
pub mod hub_page;
pub mod updates;
