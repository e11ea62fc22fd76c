// attack: try/catch around a spin to survive the deadline
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    try { for (;;) {} } catch (e) {}
    return 'survived';
  } } },
});
