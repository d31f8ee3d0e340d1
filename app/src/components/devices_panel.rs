//! "Phones": pair a phone with the hub's remote listener (a one-time code, as
//! words and as a QR code) and see or revoke the devices paired so far. Only
//! on the hub's own (loopback) page: the remote listener serves none of this.

use leptos::prelude::*;
use protocol::devices::{DeviceInfo, DevicesResponse, PairCode};

use crate::client::{self, HubError};
use crate::components::panel::Panel;
use crate::components::sessions::relative_time;
use crate::parts::{wasm_split, PartMissing};
use crate::policy::now_ms;

#[wasm_split(policy, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn devices_panel_view(on_close: Callback<()>) -> Result<AnyView, PartMissing> {
    Ok(view! { <DevicesPanel on_close /> }.into_any())
}

const BUTTON: &str = "min-h-11 rounded-md border border-slate-300 px-3 py-1 text-sm font-medium text-slate-700 hover:bg-slate-100 sm:min-h-0 dark:border-slate-700 dark:text-slate-200 dark:hover:bg-slate-800";

#[component]
fn DevicesPanel(on_close: Callback<()>) -> impl IntoView {
    let devices = RwSignal::new(None::<DevicesResponse>);
    let code = RwSignal::new(None::<PairCode>);
    let error = RwSignal::new(None::<HubError>);
    let reload = move || {
        leptos::task::spawn_local(async move {
            match client::get_json::<DevicesResponse>("/api/devices").await {
                Ok(listed) => drop(devices.try_set(Some(listed))),
                Err(err) => drop(error.try_set(Some(err))),
            }
        });
    };
    Effect::new(move |_| reload());
    // A phone pairs, or shows up from elsewhere, while this is open.
    if let Ok(every) = set_interval_with_handle(reload, std::time::Duration::from_secs(2)) {
        on_cleanup(move || every.clear());
    }
    let pair = move |_| {
        error.set(None);
        leptos::task::spawn_local(async move {
            match client::send_json::<(), PairCode>("POST", "/api/devices/pair", None).await {
                Ok(made) => drop(code.try_set(Some(made))),
                Err(err) => drop(error.try_set(Some(err))),
            }
        });
    };
    let revoke = move |device: DeviceInfo| {
        leptos::task::spawn_local(async move {
            let url = format!("/api/devices/{}", urlencoding::encode(&device.id));
            if let Err(err) = client::send_for_status("DELETE", &url).await {
                error.try_set(Some(err));
            }
            reload();
        });
    };
    let no_remote = move || devices.with(|listed| listed.as_ref().is_some_and(|listed| listed.remote.is_none()));
    view! {
        <div class="fixed inset-0 z-40 flex items-start justify-center overflow-y-auto bg-slate-900/40 p-4 sm:p-10">
            <div class="w-full max-w-lg">
                <Panel id="devices-panel" testid="devices-panel" name="devices" title=|| "Phones" on_close=Some(on_close)>
                    <p class="text-slate-600 dark:text-slate-300">
                        "A paired phone reaches the hub over HTTPS on its remote listener and can answer cards from anywhere it can reach it. "
                        "The launch token never opens that listener; each phone has its own key, revoked here."
                    </p>
                    {move || {
                        error.get().map(|err| view! { <p role="alert" class="text-red-700 dark:text-red-300">{err.message}</p> })
                    }}
                    <Show
                        when=move || !no_remote()
                        fallback=|| {
                            view! {
                                <p data-testid="no-remote" class="rounded-md bg-amber-50 p-3 text-amber-900 dark:bg-amber-950 dark:text-amber-200">
                                    "The hub has no remote listener. Start it with "
                                    <code>"--remote 0.0.0.0:7746"</code>
                                    " to pair a phone (docs/remote.md says which setup gives which features)."
                                </p>
                            }
                        }
                    >
                        <button type="button" data-testid="pair-phone" class=BUTTON on:click=pair>
                            "Pair a phone"
                        </button>
                    </Show>
                    {move || code.get().map(|made| view! { <PairingCode made /> })}
                    <h3 class="font-semibold">"Paired devices"</h3>
                    <ul data-testid="device-list" class="flex flex-col gap-2">
                        {move || {
                            let listed = devices.get().map(|listed| listed.devices).unwrap_or_default();
                            if listed.is_empty() {
                                return view! { <li class="text-slate-500 dark:text-slate-400">"None yet."</li> }.into_any();
                            }
                            let now = now_ms();
                            listed
                                .into_iter()
                                .map(|device| {
                                    let label = format!("Revoke {}", device.name);
                                    let seen = format!(
                                        "paired {}, last seen {} from {}",
                                        relative_time(device.paired_at, now),
                                        relative_time(device.last_seen, now),
                                        if device.address.is_empty() { "?" } else { device.address.as_str() },
                                    );
                                    let name = device.name.clone();
                                    view! {
                                        <li data-testid="device" class="flex flex-wrap items-center gap-2 rounded-md border border-slate-200 p-2 dark:border-slate-800">
                                            <span class="font-medium">{name}</span>
                                            <span class="flex-1 text-xs text-slate-500 dark:text-slate-400">{seen}</span>
                                            <button type="button" aria-label=label data-testid="revoke-device" class=BUTTON on:click=move |_| revoke(device.clone())>
                                                "Revoke"
                                            </button>
                                        </li>
                                    }
                                })
                                .collect_view()
                                .into_any()
                        }}
                    </ul>
                </Panel>
            </div>
        </div>
    }
}

#[component]
fn PairingCode(made: PairCode) -> impl IntoView {
    let until = crate::policy::clock_text(crate::policy::local_clock(made.expires_at));
    view! {
        <div data-testid="pairing-code" class="flex flex-col items-center gap-2 rounded-lg border border-slate-200 p-3 dark:border-slate-800">
            // The hub drew this SVG from the URL below; it holds no text of anyone else's.
            <div class="rounded bg-white p-2" role="img" aria-label="QR code of the pairing address" inner_html=made.qr_svg></div>
            <p class="text-center">"Scan it with the phone, or open " <code class="break-all">{made.url.split('#').next().unwrap_or_default().to_string()}</code> " and type:"</p>
            <p data-testid="pairing-words" class="font-mono text-xl font-semibold tracking-wide">{made.code.replace('-', " ")}</p>
            <p class="text-xs text-slate-500 dark:text-slate-400">{format!("Works once, until {until}.")}</p>
            <p class="break-all text-xs text-slate-500 dark:text-slate-400">
                "If the phone warns about the certificate, its SHA-256 fingerprint must be " <code data-testid="fingerprint">{made.fingerprint}</code>
            </p>
        </div>
    }
}
