#!/usr/bin/env node
// Runs every GraphQL-over-HTTP audit of the graphql-http package (serverAudits) against a
// live server, one after another, and prints one line per audit:
//   <ok|notice|warn|error> <id> <name>[: reason]
// then a summary. Exit status 1 when any audit ends in a warning or an error (a SHOULD or
// a MUST of the specification not met), 2 when the script itself fails.
//   node tools/graphql-http/audit.cjs http://127.0.0.1:8000/graphql
'use strict';

const { serverAudits } = require('graphql-http');

async function main(url) {
  const counts = { ok: 0, notice: 0, warn: 0, error: 0 };
  for (const audit of serverAudits({ url })) {
    const result = await audit.fn();
    counts[result.status] += 1;
    const reason = result.status === 'ok' ? '' : `: ${result.reason}`;
    console.log(`${result.status.padEnd(6)} ${result.id} ${result.name}${reason}`);
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(
    `${total} audits: ${counts.ok} ok, ${counts.notice} notice, ` +
      `${counts.warn} warn, ${counts.error} error`,
  );
  return counts.warn + counts.error === 0 ? 0 : 1;
}

const url = process.argv[2];
if (!url) {
  console.error('usage: audit.cjs <graphql url>');
  process.exit(2);
}
main(url).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
