// outcome: how a task function's return or throw becomes the end the
// server is told — one item of POST /api/v1/workers/:id/finish, as JSON
// text. The result is serialised here, once, and spliced into the batch
// body as is: a batch of a thousand results is never parsed or stringified
// twice.
//
//   returns a JSON value           complete, result = the value
//   returns undefined              complete, result = null
//   returns BigInt, a cycle, a function ...  fail INVALID_RESULT
//   throws err                     fail, code = err.code if a non-empty string,
//                                  else err.name ("Error", "TypeError", ...);
//                                  message = err.message (String(err) for a non-Error)

const CODE_MAX_BYTES = 64;            // the server's bound on errorCode
const MESSAGE_MAX_BYTES = 4096;       // what the server keeps of a message
// JSON.stringify writes a lone surrogate as an escape (\ud800), which the
// server refuses with the whole batch; a paired one it writes as is. An
// escape counts when the backslash before it is not itself escaped.
const LONE_SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The finish item of a function that returned `value`.
 * @returns {string} JSON text of the item
 */
export function completedItem(id, claimId, value) {
    let json;
    try {
        json = value === undefined ? "null" : JSON.stringify(value);
    } catch (err) {
        return failedItem(id, claimId, "INVALID_RESULT", `the result is not JSON-serialisable: ${messageOf(err)}`);
    }
    if (json === undefined)
        return failedItem(id, claimId, "INVALID_RESULT", `the result is not JSON-serialisable: it is a ${typeof value}`);
    if (LONE_SURROGATE_ESCAPE.test(json))
        return failedItem(id, claimId, "INVALID_RESULT", "the result holds a lone UTF-16 surrogate, which is not Unicode text");
    return `{"id":${JSON.stringify(id)},"claimId":${JSON.stringify(claimId)},"result":${json}}`;
}

/**
 * The finish item of a failed attempt.
 * @returns {string} JSON text of the item
 */
export function failedItem(id, claimId, code, message) {
    return JSON.stringify({
        id,
        claimId,
        errorCode: clean(code, CODE_MAX_BYTES) || "Error",
        errorMessage: clean(message, MESSAGE_MAX_BYTES),
    });
}

/** The finish item of a function that threw `err`. */
export function thrownItem(id, claimId, err) {
    try {
        return failedItem(id, claimId, codeOf(err), messageOf(err));
    } catch {
        // A thrown object whose getters throw: the failure is still reported.
        return failedItem(id, claimId, "Error", "the thrown value could not be read");
    }
}

/** err.code when it is a non-empty string, else err.name, else "Error". */
export function codeOf(err) {
    if (err && typeof err.code === "string" && err.code.length > 0) return err.code;
    if (err && typeof err.name === "string" && err.name.length > 0) return err.name;
    return "Error";
}

function messageOf(err) {
    if (err instanceof Error) return err.message;
    try {
        return String(err);
    } catch {
        return Object.prototype.toString.call(err);
    }
}

// PostgreSQL text cannot hold NUL (the server refuses the whole batch), and
// the server's byte bounds must hold after UTF-8 encoding: cut at a
// character, never inside one.
function clean(text, maxBytes) {
    let s = typeof text === "string" ? text : String(text ?? "");
    if (s.includes("\0")) s = s.replaceAll("\0", "");
    s = s.replace(LONE_SURROGATE, "\ufffd");
    if (s.length * 3 <= maxBytes || Buffer.byteLength(s) <= maxBytes) return s;
    const bytes = Buffer.from(s).subarray(0, maxBytes);
    return bytes.toString("utf8").replace(/\uFFFD$/, "");
}
