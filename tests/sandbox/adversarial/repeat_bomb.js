// attack: 'x'.repeat(2**30)
// phase: producer
// expect: limit_exceeded:memory
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return 'x'.repeat(2 ** 30).length;
  } } },
});
