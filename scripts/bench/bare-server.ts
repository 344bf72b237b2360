/** The baseline of the benchmarks: a bare Express endpoint answering a small JSON body. */
import express from 'express';

const app = express();
app.get('/bare', (_req, res) => {
  res.json({ success: true, data: { ok: true } });
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`READY ${(server.address() as { port: number }).port}`);
});
// Exit on SIGTERM (the bench's stop), so a BENCH_CPU_PROF profile is written.
process.on('SIGTERM', () => server.close(() => process.exit(0)));
