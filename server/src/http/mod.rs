//! The HTTP layer: who may reach the hub (`access`), the JSON API (`api`),
//! the page and its assets (`web`), and the one error shape (`error`), where
//! the domain's refusals become statuses and codes.

pub mod access;
pub mod api;
pub mod error;
pub mod remote;
pub mod web;
