//! The HTTP contract's shapes (`docs/API.md`), shared by the server and the UI.
//! Request and response bodies are camelCase; the NDJSON events are snake_case.
//! Every closed set of words the contract names is an enum here, so a new word
//! is one the compiler shows to both sides.

/// An enum of the contract's words: each variant's word is its serde name and
/// its `as_str`, so what is stored, sent and matched cannot differ.
macro_rules! words {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $word)] $variant,)+
        }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word),+
                }
            }

            /// The variant whose word this is.
            pub fn from_word(word: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|variant| variant.as_str() == word)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod api;
pub mod audit;
pub mod changes;
pub mod events;
