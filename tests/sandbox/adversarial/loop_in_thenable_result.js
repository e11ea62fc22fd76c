// attack: returned thenable whose then spins
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return { then(resolve) { for (;;) {} } };
  } } },
});
