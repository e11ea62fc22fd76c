// attack: returning a state larger than the limit
// phase: producer
// expect: limit_exceeded:state_size
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return 'x'.repeat(100000);
  } } },
});
