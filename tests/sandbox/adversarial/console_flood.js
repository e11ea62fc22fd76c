// attack: console.log flood
// phase: producer
// expect: limit_exceeded:log_bytes
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    for (;;) console.log('x'.repeat(1000));
  } } },
});
