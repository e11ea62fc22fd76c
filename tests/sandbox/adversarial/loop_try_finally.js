// attack: loop that catches and restarts in finally
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (;;) {
      try { for (;;) {} } catch (e) { continue; } finally { continue; }
    }
  } } },
});
