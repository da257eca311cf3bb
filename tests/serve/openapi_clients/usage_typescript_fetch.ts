// serve_openapi_clients: the typescript-fetch client openapi-generator makes of
// docs/openapi.json, compiled by tsc --strict and then run by node against the live server:
// the example request with a string, an object and a list `state`, each answer read through
// the generated types. Prints one JSON line that the Python test compares with the answers of
// the same bodies sent as plain JSON.
import {
  Configuration,
  DefaultApi,
  ResponseError,
  type ChoiceAnswer,
  type Question,
  type SystemOneRequest,
  type SystemOneResponse,
} from "./typescript-fetch";

declare const process: { argv: string[]; exitCode?: number };

const questions: { [key: string]: Question } = {
  action: {
    type: "choice",
    instructions: "Which input keeps the drone flying through the next gap?",
    criteria: { thrust: "fire the rotors for an upward impulse", glide: "let gravity pull the drone down" },
  },
  danger: {
    type: "noul",
    instructions: "Will the drone crash within the next half second if it keeps gliding?",
  },
  margin: {
    type: "score",
    instructions: "How much room is left above and below the drone?",
    criteria: ["none", "tight", "comfortable"],
  },
};

export const requests: { [name: string]: SystemOneRequest } = {
  string: { state: "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", questions },
  object: { state: { vy: 0, dx: 36, gaps: [9, 7], next: { alt: 32 } }, questions },
  list: { state: ["vy 0", 36, null, { alt: 32 }], questions },
};

function summary(res: SystemOneResponse) {
  const answers: { [id: string]: unknown } = {};
  for (const [id, a] of Object.entries(res.answers)) {
    if (a.type === "choice") {
      const c: ChoiceAnswer = a;
      answers[id] = { type: c.type, choice: c.choice, probabilities: c.probabilities, confidence: c.confidence };
    } else if (a.type === "score") {
      answers[id] = { type: a.type, score: a.score, probabilities: a.probabilities, confidence: a.confidence };
    } else {
      answers[id] = { type: a.type, noul: a.noul };
    }
  }
  return { model: res.model, input_tokens: res.usage.inputTokens, answers };
}

async function main(): Promise<void> {
  const api = new DefaultApi(new Configuration({ basePath: process.argv[2] }));
  const out: { [name: string]: unknown } = {};
  for (const [name, req] of Object.entries(requests)) {
    out[name] = summary(await api.systemOne({ systemOneRequest: req }));
  }
  try {
    await api.systemOne({ systemOneRequest: { model: "no-such-model", state: "x", questions } });
    out.error = "no error";
  } catch (e) {
    out.error = e instanceof ResponseError ? e.response.status : String(e);
  }
  const health = await api.health();
  out.health = health.status;
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.log(`typescript-fetch client failed: ${e}`);
  process.exitCode = 1;
});
