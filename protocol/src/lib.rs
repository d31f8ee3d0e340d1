//! The HTTP contract's shapes (`docs/API.md`), shared by the server and the UI.
//! Request and response bodies are camelCase; the NDJSON events are snake_case.
//! Every closed set of words the contract names is an enum here, so a new word
//! is one the compiler shows to both sides.

/// An enum of the contract's words: each variant's word is its serde name and
/// its `as_str`, so what is stored, sent and matched cannot differ. A word this
/// version does not know is kept as `Other` (a newer hub wrote it, a client
/// sent it): shown or refused by name, never read as another word, never an
/// error that hides the rest. Only a string is a word: `5` or `{"approve": null}`
/// is refused as serde refuses a non-string.
macro_rules! words {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A word this version does not know, as it was written.
            Other(String),
        }

        impl $name {
            /// Every word this version knows.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $word,)+
                    Self::Other(word) => word,
                }
            }

            /// The variant whose word this is, else `Other`.
            pub fn from_word(word: &str) -> Self {
                match word {
                    $($word => Self::$variant,)+
                    other => Self::Other(other.to_string()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = <String as serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::from_word(&word))
            }
        }
    };
}

pub mod api;
pub mod audit;
pub mod changes;
pub mod checkpoints;
pub mod devices;
pub mod events;
pub mod habits;
