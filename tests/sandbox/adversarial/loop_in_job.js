// attack: infinite loop inside a promise job
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    Promise.resolve().then(() => { for (;;) {} });
    return 1;
  } } },
});
