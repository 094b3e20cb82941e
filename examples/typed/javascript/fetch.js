// A typed component in JavaScript, in the ecosystem's style: one exported
// function over plain wasi:http, no carapace contract.
import { handle } from 'wasi:http/outgoing-handler@0.2.12';
import { Fields, OutgoingRequest } from 'wasi:http/types@0.2.12';

export function fetch(url) {
  const match = /^(https?):\/\/([^/]+)(\/.*)?$/.exec(url);
  if (!match) {
    throw `not an http(s) URL: ${url}`;
  }
  const request = new OutgoingRequest(new Fields());
  request.setScheme({ tag: match[1] === 'https' ? 'HTTPS' : 'HTTP' });
  request.setAuthority(match[2]);
  request.setPathWithQuery(match[3] || '/');
  let pending;
  try {
    pending = handle(request, undefined);
  } catch (e) {
    throw `the request was refused: ${JSON.stringify(e.payload ?? e)}`;
  }
  pending.subscribe().block();
  const outcome = pending.get();
  if (!outcome || outcome.tag !== 'ok' || outcome.val.tag !== 'ok') {
    throw `the request failed: ${JSON.stringify(outcome)}`;
  }
  const response = outcome.val.val;
  const status = response.status();
  const body = response.consume();
  const stream = body.stream();
  const chunks = [];
  for (;;) {
    try {
      chunks.push(stream.blockingRead(65536n));
    } catch (e) {
      break; // closed
    }
  }
  const text = new TextDecoder().decode(
    chunks.reduce((all, c) => { const n = new Uint8Array(all.length + c.length); n.set(all); n.set(c, all.length); return n; }, new Uint8Array()));
  if (status >= 400) {
    throw `HTTP ${status}`;
  }
  return text;
}
