// attack: throw null (indistinguishable from out-of-memory)
// phase: producer
// expect: limit_exceeded:memory
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw null;
  } } },
});
