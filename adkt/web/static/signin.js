// Signing in to a server that requires authentication (docs/security.md): when the API answers
// 401, the page asks for an API key or an OIDC bearer token, keeps it in sessionStorage (gone when
// the tab closes, never in a URL or localStorage) and sends it as "Authorization: Bearer" on every
// request, event streams included (they are read with fetch, which can send headers).

const KEY = "adkt.token";

// Its own stylesheet, so a page needs only to import this module (through dom.js).
if (!document.querySelector('link[href="/static/signin.css"]')) {
  document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href: "/static/signin.css" }));
}

export const storedToken = () => sessionStorage.getItem(KEY);

export function signOut() {
  sessionStorage.removeItem(KEY);
  location.reload();
}

let asking = null; // one prompt at a time: every request refused meanwhile waits for the same answer

// Resolves with the token the person entered (stored); `refused` is the server's message about the
// token tried last, shown so a mistyped key is seen as refused rather than silently asked again.
export function askForToken(refused) {
  if (!asking) {
    // A refused token is forgotten at once: the page shows no one signed in while it asks.
    sessionStorage.removeItem(KEY);
    document.querySelector("header [data-testid=sign-out]")?.remove();
    asking = prompt(refused).then((token) => {
      asking = null;
      sessionStorage.setItem(KEY, token);
      showSignedIn();
      return token;
    });
  }
  return asking;
}

function prompt(refused) {
  return new Promise((resolve) => {
    const input = Object.assign(document.createElement("input"), {
      type: "password", autocomplete: "current-password", placeholder: "API key or bearer token", required: true,
    });
    input.dataset.testid = "token";
    const error = document.createElement("div");
    error.className = "error";
    error.dataset.testid = "sign-in-error";
    error.hidden = !refused;
    error.textContent = refused || "";
    const button = Object.assign(document.createElement("button"), { type: "submit", className: "primary", textContent: "Sign in" });
    button.dataset.testid = "sign-in";
    const form = document.createElement("form");
    form.className = "signin card";
    form.dataset.testid = "sign-in-form";
    const title = Object.assign(document.createElement("h2"), { textContent: "Sign in" });
    const hint = Object.assign(document.createElement("p"), {
      className: "hint",
      textContent: "This server requires authentication. Paste your API key (ADK_API_KEYS) or an OIDC access token; " +
        "it is kept for this tab only.",
    });
    form.append(title, hint, error, input, button);
    const overlay = document.createElement("div");
    overlay.className = "signin-overlay";
    overlay.append(form);
    form.onsubmit = (e) => {
      e.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      overlay.remove();
      resolve(token);
    };
    document.body.append(overlay);
    input.focus();
  });
}

export function showSignedIn() {
  const header = document.querySelector("header");
  if (!header || !storedToken() || header.querySelector("[data-testid=sign-out]")) return;
  const out = Object.assign(document.createElement("a"), { href: "#", className: "sub signout", textContent: "sign out" });
  out.dataset.testid = "sign-out";
  out.onclick = (e) => { e.preventDefault(); signOut(); };
  header.append(out);
}
