// tests/integration/nested.sh's Testcontainers case (tests/nested/cases.sh):
// the npm testcontainers package (node_modules at /opt/tc, read-only) talks
// to the nested Docker API at DOCKER_HOST, starts busybox httpd from the
// run's registry, waits for its port, fetches through getHost():
// getMappedPort(8080) (published by the nested engine, slirp4netns) and
// stops it.  Prints "tc: BODY in MS ms"; exits 1 on a wrong answer.
"use strict";
const { GenericContainer, Wait } = require("/opt/tc/node_modules/testcontainers");
const http = require("http");

function get(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, (r) => {
        let b = "";
        r.on("data", (c) => (b += c));
        r.on("end", () => resolve(b));
      })
      .on("error", reject);
  });
}

(async () => {
  const t0 = Date.now();
  const token = process.env.TOKEN;
  const c = await new GenericContainer(process.env.TC_IMAGE)
    .withEnvironment({ TOKEN: token })
    .withCommand(["sh", "-c", 'mkdir -p /www && echo "tc-web-$TOKEN" >/www/index.html && exec httpd -f -p 8080 -h /www'])
    .withExposedPorts(8080)
    .withWaitStrategy(Wait.forListeningPorts())
    .start();
  const url = `http://${c.getHost()}:${c.getMappedPort(8080)}/`;
  const body = (await get(url)).trim();
  await c.stop();
  console.log(`tc: ${url} -> ${body} in ${Date.now() - t0} ms`);
  if (body !== `tc-web-${token}`) {
    console.error(`tc: unexpected answer ${JSON.stringify(body)}`);
    process.exit(1);
  }
})().catch((e) => {
  console.error(`tc: ${(e && e.stack) || e}`);
  process.exit(2);
});
