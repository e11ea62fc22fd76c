// attack: catastrophic alternation in replace
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return ('a'.repeat(40) + '!').replace(/(a|aa)+$/, '');
  } } },
});
