// attack: catching out-of-memory and allocating again
// phase: producer
// expect: limit_exceeded:cpu_time|memory
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (;;) {
      try { const a = []; for (;;) a.push({}); } catch (e) {}
    }
  } } },
});
