//! One-time pairing codes, without IO: the clock and the code's randomness
//! come in. One code lives at a time: making a new one ends the old one and
//! its count of wrong guesses.

/// How long a code may be used.
pub const CODE_LIFETIME_MS: u64 = 10 * 60 * 1000;
/// Wrong guesses a code survives; after them pairing is refused until a new code.
pub const WRONG_GUESSES_ALLOWED: u32 = 10;

/// Why a code did not pair a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PairRefusal {
    #[error("No pairing code is open: make one on the hub's own page (\"Pair a phone\").")]
    NoCode,
    #[error("The pairing code has expired: make a new one on the hub's own page.")]
    Expired,
    #[error("That is not the pairing code. Check it on the hub's own page.")]
    Wrong,
    #[error("Too many wrong pairing codes: make a new one on the hub's own page.")]
    TooManyWrong,
}

#[derive(Debug, Clone)]
struct Offer {
    code: String,
    expires_at_ms: u64,
    wrong: u32,
}

#[derive(Debug, Clone, Default)]
pub struct PairingBook {
    offer: Option<Offer>,
}

impl PairingBook {
    /// Opens `code` (already normalized, see [`normalize`]) until `now_ms` +
    /// [`CODE_LIFETIME_MS`], ending any code before it; returns its expiry.
    pub fn open(&mut self, code: String, now_ms: u64) -> u64 {
        let expires_at_ms = now_ms.saturating_add(CODE_LIFETIME_MS);
        self.offer = Some(Offer { code, expires_at_ms, wrong: 0 });
        expires_at_ms
    }

    /// Uses the open code once: the right code pairs and ends it.
    pub fn redeem(&mut self, candidate: &str, now_ms: u64) -> Result<(), PairRefusal> {
        let offer = self.offer.as_mut().ok_or(PairRefusal::NoCode)?;
        if offer.wrong >= WRONG_GUESSES_ALLOWED {
            return Err(PairRefusal::TooManyWrong);
        }
        if now_ms >= offer.expires_at_ms {
            self.offer = None;
            return Err(PairRefusal::Expired);
        }
        if !constant_time_eq(normalize(candidate).as_bytes(), offer.code.as_bytes()) {
            offer.wrong += 1;
            return Err(PairRefusal::Wrong);
        }
        self.offer = None;
        Ok(())
    }
}

/// The words a code is made of: 256 short, distinct, easily spoken words, so
/// four of them carry 32 bits.
pub const WORDS: [&str; 256] = [
    "acid", "acorn", "actor", "amber", "angle", "ankle", "apple", "apron", "arena", "arrow", "atlas", "attic", "audio",
    "award", "bacon", "badge", "bagel", "baker", "bamboo", "banjo", "barn", "basil", "beach", "beard", "berry",
    "bison", "blade", "blimp", "bloom", "board", "bonus", "book", "brass", "bread", "brick", "broom", "brush",
    "bucket", "buddy", "cabin", "cable", "cactus", "camel", "canal", "candy", "canoe", "cargo", "carpet", "cedar",
    "chalk", "cheese", "cherry", "chess", "chili", "cider", "cinema", "circle", "cliff", "clock", "cloud", "clover",
    "coast", "cobra", "cocoa", "comet", "copper", "coral", "cotton", "crane", "crayon", "cricket", "crown", "cube",
    "daisy", "dance", "delta", "denim", "desert", "diary", "dinner", "disco", "dolphin", "donkey", "dragon", "drum",
    "eagle", "easel", "echo", "elbow", "ember", "engine", "falcon", "fabric", "feather", "fence", "ferry", "fiddle",
    "fig", "flame", "flute", "forest", "fossil", "fox", "frog", "galaxy", "garden", "garlic", "gecko", "ginger",
    "glacier", "glove", "goat", "gravel", "guitar", "hammer", "harbor", "hazel", "helmet", "heron", "honey", "hotel",
    "iceberg", "igloo", "island", "ivory", "jacket", "jaguar", "jelly", "jigsaw", "jungle", "kayak", "kettle", "kiwi",
    "koala", "ladder", "lagoon", "lamp", "lantern", "lemon", "lentil", "lily", "lizard", "llama", "lobster", "magnet",
    "mango", "maple", "marble", "meadow", "melon", "mirror", "mitten", "monkey", "moose", "mosaic", "motor", "muffin",
    "mural", "napkin", "nectar", "needle", "noodle", "nutmeg", "oasis", "ocean", "olive", "onion", "orbit", "orchid",
    "otter", "oyster", "paddle", "palace", "panda", "paper", "parrot", "peach", "pebble", "pepper", "piano", "pickle",
    "pigeon", "pillow", "pirate", "planet", "plum", "pocket", "pony", "potato", "pretzel", "puffin", "pumpkin",
    "puzzle", "quartz", "quill", "rabbit", "radar", "radish", "raft", "rain", "raven", "ribbon", "river", "robin",
    "rocket", "saddle", "salmon", "sandal", "scarf", "shell", "silver", "skate", "sled", "snail", "socket", "spider",
    "spoon", "squash", "stable", "statue", "stone", "sugar", "summit", "sunset", "swan", "table", "tiger", "toast",
    "tomato", "torch", "tractor", "trumpet", "tulip", "tunnel", "turtle", "umbrella", "unicorn", "valley", "velvet",
    "violin", "volcano", "waffle", "walnut", "walrus", "wagon", "whale", "willow", "window", "wizard", "yacht",
    "yogurt", "zebra", "zipper", "anchor", "biscuit", "compass",
];

/// Four words from four random bytes, joined by `-`.
pub fn code_from(random: [u8; 4]) -> String {
    random.iter().map(|byte| WORDS[*byte as usize]).collect::<Vec<_>>().join("-")
}

/// What the user typed, as codes are compared: lowercase words joined by `-`,
/// whatever separated them (spaces, dashes, a line break).
pub fn normalize(typed: &str) -> String {
    typed
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CODE: &str = "tiger-apple-river-zebra";

    #[test]
    fn the_word_list_has_256_distinct_lowercase_words() {
        let mut words = WORDS.to_vec();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), 256);
        assert!(WORDS.iter().all(|word| word.chars().all(|c| c.is_ascii_lowercase())));
        assert_eq!(code_from([0, 1, 2, 255]), "acid-acorn-actor-compass");
    }

    #[test]
    fn a_code_pairs_once_whatever_its_spacing() {
        let mut book = PairingBook::default();
        book.open(CODE.into(), 1_000);
        assert_eq!(book.redeem(" Tiger apple\nRIVER  zebra ", 2_000), Ok(()));
        assert_eq!(book.redeem(CODE, 2_001), Err(PairRefusal::NoCode));
    }

    #[test]
    fn a_code_expires_after_ten_minutes() {
        let mut book = PairingBook::default();
        let expiry = book.open(CODE.into(), 1_000);
        assert_eq!(expiry, 1_000 + CODE_LIFETIME_MS);
        assert_eq!(book.redeem(CODE, expiry), Err(PairRefusal::Expired));
        assert_eq!(book.redeem(CODE, expiry), Err(PairRefusal::NoCode));
    }

    #[test]
    fn ten_wrong_codes_close_pairing_until_a_new_code() {
        let mut book = PairingBook::default();
        book.open(CODE.into(), 0);
        for _ in 0..WRONG_GUESSES_ALLOWED {
            assert_eq!(book.redeem("acid-acid-acid-acid", 1), Err(PairRefusal::Wrong));
        }
        assert_eq!(book.redeem(CODE, 1), Err(PairRefusal::TooManyWrong));
        book.open("acid-acid-acid-acid".into(), 2);
        assert_eq!(book.redeem(CODE, 3), Err(PairRefusal::Wrong));
        assert_eq!(book.redeem("acid acid acid acid", 3), Ok(()));
    }

    #[test]
    fn a_new_code_ends_the_old_one() {
        let mut book = PairingBook::default();
        book.open(CODE.into(), 0);
        book.open("acid-acid-acid-acid".into(), 1);
        assert_eq!(book.redeem(CODE, 2), Err(PairRefusal::Wrong));
    }

    #[derive(Debug, Clone)]
    enum Step {
        Open(u64),
        Guess(bool, u64),
    }

    proptest! {
        /// Whatever happens: a code pairs at most once, never after its expiry,
        /// never after ten wrong guesses, and nothing pairs without a code.
        #[test]
        fn a_code_pairs_at_most_once_in_time_and_within_ten_wrong(
            steps in proptest::collection::vec(
                prop_oneof![
                    (0u64..3_000_000).prop_map(Step::Open),
                    (any::<bool>(), 0u64..3_000_000).prop_map(|(right, at)| Step::Guess(right, at)),
                ],
                0..60,
            )
        ) {
            let mut book = PairingBook::default();
            let mut opened: Option<(u64, u32, bool)> = None; // (expiry, wrong, used)
            let mut now = 0;
            for step in steps {
                match step {
                    Step::Open(dt) => {
                        now += dt;
                        opened = Some((book.open(CODE.into(), now), 0, false));
                    }
                    Step::Guess(right, dt) => {
                        now += dt;
                        let paired = book.redeem(if right { CODE } else { "acid-acid-acid-acid" }, now).is_ok();
                        if paired {
                            let (expiry, wrong, used) = opened.expect("paired without a code");
                            prop_assert!(right && now < expiry && wrong < WRONG_GUESSES_ALLOWED && !used);
                            opened = Some((expiry, wrong, true));
                        } else if let Some((expiry, wrong, used)) = opened.as_mut() {
                            if !right && !*used && now < *expiry {
                                *wrong += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}
