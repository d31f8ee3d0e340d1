//! How long a card may still wait: the folder's approval timeout counted from
//! when the wait began. When it runs out the hub answers "no decision" itself;
//! this only shows the time left.

use leptos::prelude::*;

use crate::policy::now_ms;

/// "4:05 left" (minutes and seconds; hours past an hour), "0:00 left" when due.
pub fn time_left(deadline_ms: u64, now_ms: u64) -> String {
    let secs = deadline_ms.saturating_sub(now_ms).div_ceil(1000);
    let (hours, minutes, seconds) = (secs / 3600, secs / 60 % 60, secs % 60);
    match hours {
        0 => format!("{minutes}:{seconds:02} left"),
        _ => format!("{hours}:{minutes:02}:{seconds:02} left"),
    }
}

/// The time left before the hub answers "no decision", ticking each second;
/// nothing when the folder has no timeout.
#[component]
pub fn Countdown(deadline: Signal<Option<u64>>, #[prop(into)] testid: String) -> impl IntoView {
    let clock = RwSignal::new(now_ms());
    // In the browser only (effects do not run on the server).
    Effect::new(move |_| {
        if let Ok(ticker) = set_interval_with_handle(
            move || {
                let _ = clock.try_set(now_ms());
            },
            std::time::Duration::from_secs(1),
        ) {
            on_cleanup(move || ticker.clear());
        }
    });
    move || {
        deadline.get().map(|deadline| {
            view! {
                <span
                    data-testid=testid.clone()
                    title="Nobody decided by then: the hub answers 'no decision' and the call is not run"
                    class="rounded-full bg-amber-100 px-2 py-0.5 font-mono text-xs font-normal normal-case tracking-normal text-amber-900 dark:bg-amber-900/50 dark:text-amber-100"
                >
                    {move || time_left(deadline, clock.get())}
                </span>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_rounds_up_to_the_second_and_stops_at_zero() {
        assert_eq!(time_left(10_000, 0), "0:10 left");
        assert_eq!(time_left(10_000, 9_001), "0:01 left");
        assert_eq!(time_left(10_000, 10_000), "0:00 left");
        assert_eq!(time_left(10_000, 99_000), "0:00 left");
        assert_eq!(time_left(5 * 60_000 + 5_000, 0), "5:05 left");
        assert_eq!(time_left(86_400_000, 0), "24:00:00 left");
    }
}
