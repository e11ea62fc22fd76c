// attack: catastrophic /^(a+)+$/
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return /^(a+)+$/.test('a'.repeat(40) + 'b');
  } } },
});
