// attack: looping getter on the returned value
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return { get x() { for (;;) {} } };
  } } },
});
