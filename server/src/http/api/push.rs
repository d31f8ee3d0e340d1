//! `/api/push/*`: the hub's Web Push key, and a paired device's subscription
//! (`docs/API.md`, "Notifications"). Only a request the remote gate let in as
//! a paired device (`Extension<PairedDevice>`) may subscribe; bad input
//! changes nothing.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::{Extension, Json};
use protocol::devices::{PushKeyResponse, PushSubscription, PushUnsubscribe};

use crate::alerts::webpush::{self, PushError, WebPush};
use crate::http::error::{ApiJson, ApiResult};
use crate::remote::PairedDevice;
use crate::store::PushSubscriptionRow;

type Push = Option<Extension<Arc<WebPush>>>;
type Device = Option<Extension<PairedDevice>>;

/// `GET /api/push/key`: the browsers' `applicationServerKey`, and whether this one may subscribe.
pub async fn key(push: Push, device: Device) -> ApiResult<Json<PushKeyResponse>> {
    let Some(Extension(push)) = push else { return Err(PushError::Off.into()) };
    Ok(Json(PushKeyResponse { public_key: push.public_key().to_string(), subscribable: device.is_some() }))
}

/// `POST /api/push/subscribe`: keeps the browser's subscription for its device; 201.
pub async fn subscribe(push: Push, device: Device, ApiJson(body): ApiJson<PushSubscription>) -> ApiResult<StatusCode> {
    let Some(Extension(push)) = push else { return Err(PushError::Off.into()) };
    let Some(Extension(device)) = device else { return Err(PushError::NotPaired.into()) };
    webpush::checked_public(&body).await?;
    let row = PushSubscriptionRow {
        endpoint: body.endpoint,
        device_id: device.id,
        p256dh: body.keys.p256dh,
        auth: body.keys.auth,
        created_at_ms: crate::clock::now_ms(),
    };
    if !push.store().save_push_subscription(row).await.map_err(PushError::from)? {
        return Err(PushError::NotPaired.into());
    }
    Ok(StatusCode::CREATED)
}

/// `DELETE /api/push/subscribe` `{endpoint}`: removes the device's own subscription; 204.
pub async fn unsubscribe(push: Push, device: Device, ApiJson(body): ApiJson<PushUnsubscribe>) -> ApiResult<StatusCode> {
    let Some(Extension(push)) = push else { return Err(PushError::Off.into()) };
    let Some(Extension(device)) = device else { return Err(PushError::NotPaired.into()) };
    let removed = push.store().delete_push_subscription(&body.endpoint, Some(&device.id)).await;
    match removed.map_err(PushError::from)? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(PushError::NotFound.into()),
    }
}
