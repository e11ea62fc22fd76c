// attack: infinite loop in plain code
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (;;) {}
  } } },
});
