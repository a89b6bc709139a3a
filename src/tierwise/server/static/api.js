// The HTTP side of the web chat: fetch with the API key (when the server requires one), and every
// refusal or network failure turned into an error whose message says what happened and what to do.

const KEY = "tierwise.apiKey";
const listeners = { unauthorized: null };

export const storedKey = () => localStorage.getItem(KEY) || "";

export function saveKey(key) {
  if (key) localStorage.setItem(KEY, key);
  else localStorage.removeItem(KEY);
}

// Called with the error when the server answers 401 (no key, or a key it does not know).
export function onUnauthorized(callback) {
  listeners.unauthorized = callback;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

function headers(extra = {}) {
  const out = { "content-type": "application/json", ...extra };
  const key = storedKey();
  if (key) out.authorization = `Bearer ${key}`;
  return out;
}

// 401 → enter a key; 403 → refused; 429 → wait; anything else → the server's own message.
async function refusal(response) {
  const body = await response.json().catch(() => ({}));
  const said = body.error || body.detail || response.statusText || "";
  const status = response.status;
  let message;
  if (status === 401) message = `The server needs a valid API key (401): ${said}`;
  else if (status === 403) message = `Refused (403): ${said}`;
  else if (status === 429) {
    const wait = response.headers.get("retry-after");
    message = `Too many requests (429): wait ${wait ? `${wait} s` : "a moment"} and try again.`;
  } else message = said || `request failed (${status})`;
  const error = new ApiError(status, message);
  if (status === 401 && listeners.unauthorized) listeners.unauthorized(error);
  return error;
}

// fetch, with the key; throws ApiError for a refusal or a network failure (AbortError passes through).
export async function request(path, options = {}) {
  let response;
  try {
    response = await fetch(path, { ...options, headers: headers(options.headers) });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, `Cannot reach the server (${error.message}). Is tierwise serve still running?`);
  }
  if (!response.ok) throw await refusal(response);
  return response;
}

// request() and its JSON body (null for 204).
export async function api(path, options = {}) {
  const response = await request(path, options);
  if (response.status === 204) return null;
  return response.json();
}
