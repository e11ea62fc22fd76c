// attack: throw a string
// phase: producer
// expect: logic_error:threw a string
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw 'nope';
  } } },
});
