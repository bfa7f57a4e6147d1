//! A bearer token judged on its own, as a TokenReview asks (upstream's token authenticators
//! behind the bearer-token filter, with the audiences the review names): the static token
//! file and service account tokens, `system:authenticated` added.

use super::{with_authenticated_group, Authenticator, UserInfo};

/// What the authenticators made of a token.
#[derive(Debug, PartialEq, Eq)]
pub enum TokenOutcome {
    /// The user, and the audiences (of those asked for) the token is good for.
    User {
        user: UserInfo,
        audiences: Vec<String>,
    },
    /// Why not, in upstream's words.
    Refused(String),
}

/// Upstream's errInvalidToken: no authenticator knew the token.
const INVALID_TOKEN: &str = "invalid bearer token";

impl Authenticator {
    /// The server's API audiences (`--api-audiences`), empty without service account tokens.
    fn api_audiences(&self) -> Vec<String> {
        self.service_accounts
            .as_ref()
            .and_then(|r| r.service_account_tokens())
            .map(|t| t.api_audiences().to_vec())
            .unwrap_or_default()
    }

    /// Authenticates `token` for `audiences` (empty: the server's own).
    pub async fn review_token(&self, token: &str, audiences: &[String]) -> TokenOutcome {
        let api = self.api_audiences();
        if let Some(user) = self.tokens.user(token.as_bytes()) {
            // The token file knows no audiences (upstream wraps it audience-agnostic): it
            // answers for the requested audiences the server itself serves.
            let granted: Vec<String> = match (audiences.is_empty(), api.is_empty()) {
                (true, _) => api.clone(),
                (false, true) => audiences.to_vec(),
                (false, false) => audiences
                    .iter()
                    .filter(|a| api.contains(a))
                    .cloned()
                    .collect(),
            };
            if !audiences.is_empty() && !api.is_empty() && granted.is_empty() {
                return TokenOutcome::Refused(INVALID_TOKEN.into());
            }
            return TokenOutcome::User {
                user: with_authenticated_group(user.clone()),
                audiences: granted,
            };
        }
        let Some(registry) = self.service_accounts.as_ref() else {
            return TokenOutcome::Refused(INVALID_TOKEN.into());
        };
        let target = (!audiences.is_empty()).then_some(audiences);
        match registry
            .authenticate_service_account_token_for(token, target)
            .await
        {
            Ok(Some((user, audiences))) => TokenOutcome::User {
                user: with_authenticated_group(user),
                audiences,
            },
            Ok(None) => TokenOutcome::Refused(INVALID_TOKEN.into()),
            Err(e) => TokenOutcome::Refused(e.to_string()),
        }
    }
}
