// The review desk's pages. Everything is inline (CSS, JavaScript): the desk works offline and
// loads nothing from elsewhere. Values reach the page HTML-escaped; values for the script go
// through data- attributes, never into script text. The style sheet and the two scripts are
// constant, so the Content-Security-Policy names them by their SHA-256: no other inline script,
// style or event handler runs, whatever text reaches a page.
#include "review/review_pages.hpp"

#include <algorithm>
#include <array>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/extraction/provenance.hpp"
#include "adapters/extraction/supplier_knowledge.hpp"
#include "adapters/ocr/language_guess.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "config/providers.hpp"

namespace ingestd {

namespace {

constexpr const char* style = R"css(
*{box-sizing:border-box}body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f4f5f7}
header{display:flex;gap:1em;align-items:center;padding:.5em 1em;background:#1d2430;color:#fff}
header a{color:#fff}header .who{margin-left:auto}header form{display:inline}
main{padding:1em}a{color:#0b5cad}table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e2e4e8;vertical-align:top}
tr.sel{background:#e6f0fb}.counts span{margin-right:1.2em}.tag{padding:0 .4em;border-radius:3px;background:#eee}
.tag.failed{background:#fde2e1}.tag.gate{background:#fff3cd}.tag.sample{background:#e6f0fb}.muted{color:#667}
.doc{display:grid;grid-template-columns:minmax(0,1.1fr) minmax(0,1fr);gap:1em}
.pane{background:#fff;padding:.8em;border:1px solid #e2e4e8;border-radius:4px;margin-bottom:1em}
.pageimg{display:block;max-width:100%;border:1px solid #ccd;cursor:crosshair}
.pagebox{position:relative;display:inline-block;max-width:100%}
.mark{position:absolute;border:2px solid #d9822b;background:rgba(255,190,0,.25);pointer-events:none}.field{margin-bottom:.5em}
#fields{display:grid;grid-template-columns:1fr 1fr;column-gap:.8em}
.field[data-name=supplier_address],.field[data-name=line_items]{grid-column:1/3}
.field label{display:block;font-weight:600;font-size:12px}.field input,.field textarea{width:100%;padding:.3em;font:inherit}
.field.flagged input,.field.flagged textarea{border:2px solid #d9822b;background:#fff8ef}
.field .machine,.field .note,.field .learned{font-size:12px;color:#667}.field .note{color:#a14d00}.field .learned{color:#2b6b2b}
.field.changed input{border:2px solid #2b7bd9}
table.lines td{padding:.15em .2em}table.lines input.num{text-align:right}
table.lines tr.rowbad input{background:#fff3cd}table.lines input.bad{border:2px solid #b00020}
table.lines td.acts{white-space:nowrap;width:1%}table.lines td.acts button{padding:.1em .4em;margin:0}
.field.flagged table.lines{outline:2px solid #d9822b}#li-sum{font-size:12px}
.checks li{color:#a14d00}.error{color:#b00020;font-weight:600}.ok{color:#1b7d2b;font-weight:600}
fieldset{border:1px solid #e2e4e8;margin:.6em 0;padding:.4em .6em}fieldset label{margin-right:.3em}
fieldset select{margin-right:.8em;font:inherit}
button{font:inherit;padding:.35em .9em;margin-right:.4em;cursor:pointer}button.primary{background:#1b7d2b;color:#fff;border:0}
pre{white-space:pre-wrap;max-height:24em;overflow:auto;background:#fafafa;padding:.5em}
kbd{border:1px solid #aab;border-radius:3px;padding:0 .3em;font-size:12px;background:#fff}
.pane.login{max-width:26em;margin:3em auto}
)css";

std::string head(std::string_view title) {
  return "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>"
         + html_escape(title) + " · ingestd review</title><style>" + style
         + "</style></head><body>";
}

std::string top_bar(const page_context& ctx) {
  return "<header><strong>ingestd review desk</strong><a href=\"/review\">Queue</a>"
         "<a href=\"/review/knowledge\">Learned</a>"
         "<span class=\"who\">"
         + html_escape(ctx.reviewer)
         + "</span><form method=\"post\" action=\"/review/logout\"><input type=\"hidden\" "
           "name=\"csrf\" value=\""
         + html_escape(ctx.csrf) + "\"><button>Sign out</button></form></header>";
}

std::string age_text(int64_t seconds) {
  if (seconds < 60)
    return std::to_string(seconds) + " s";
  if (seconds < 3600)
    return std::to_string(seconds / 60) + " min";
  if (seconds < 86400)
    return std::to_string(seconds / 3600) + " h";
  return std::to_string(seconds / 86400) + " d";
}

/// A JSON value as the text of a form input: strings as they are, null as empty, anything else
/// as JSON.
std::string input_text(const rapidjson::Value& v) {
  if (v.IsNull())
    return "";
  if (v.IsString())
    return {v.GetString(), v.GetStringLength()};
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

struct field_spec {
  const char* name;
  const char* label;
  /// "string", "number", "date" or "json" (how the page's script shows the value and reads
  /// the input back).
  const char* type;
};

constexpr field_spec fields[] = {
    {"invoice_number", "Invoice number", "string"},
    {"invoice_date", "Invoice date", "date"},
    {"due_date", "Due date", "date"},
    {"supplier_name", "Supplier", "string"},
    {"supplier_address", "Supplier address", "string"},
    {"supplier_vat_id", "Supplier VAT id", "string"},
    {"customer_name", "Customer", "string"},
    {"currency", "Currency", "string"},
    {"subtotal", "Subtotal", "number"},
    {"vat_amount", "VAT", "number"},
    {"total", "Total", "number"},
    {"line_items", "Line items", "json"},
};

/// Rows of a JSON array of objects as a table with the given columns.
std::string json_table(const std::string& json,
                       std::initializer_list<std::pair<const char*, const char*>> cols,
                       const char* empty) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsArray() || doc.Empty())
    return std::string{"<p class=\"muted\">"} + empty + "</p>";
  std::string out = "<table><tr>";
  for (auto& [key, label] : cols)
    out += "<th>" + html_escape(label) + "</th>";
  out += "</tr>";
  for (auto& row : doc.GetArray()) {
    out += "<tr>";
    for (auto& [key, label] : cols) {
      auto it = row.IsObject() ? row.FindMember(key) : row.MemberEnd();
      std::string cell = it == row.MemberEnd() ? "" : input_text(it->value);
      if (std::string_view{key} == "document_id" && !cell.empty())
        out += "<td><a href=\"/review/documents/" + html_escape(cell) + "\">"
               + html_escape(cell.substr(0, 8)) + "…</a></td>";
      else
        out += "<td>" + html_escape(cell) + "</td>";
    }
    out += "</tr>";
  }
  return out + "</table>";
}

constexpr const char* queue_script = R"js(
(function(){
  var rows=[].slice.call(document.querySelectorAll('tr[data-href]')),i=0;
  function sel(n){if(!rows.length)return;rows[i].classList.remove('sel');i=Math.max(0,Math.min(rows.length-1,n));rows[i].classList.add('sel');rows[i].scrollIntoView({block:'nearest'});}
  sel(0);
  rows.forEach(function(r,n){r.addEventListener('click',function(){location.href=r.dataset.href;});});
  document.addEventListener('keydown',function(e){
    if(e.target.matches('input,textarea,select'))return;
    if(e.key==='j'||e.key==='ArrowDown'){sel(i+1);e.preventDefault();}
    else if(e.key==='k'||e.key==='ArrowUp'){sel(i-1);e.preventDefault();}
    else if((e.key==='Enter'||e.key==='o')&&rows.length){location.href=rows[i].dataset.href;}
  });
})();
)js";

// The learned facts' page: a Forget button deletes its fact and its row.
constexpr const char* knowledge_script = R"js(
(function(){
  var main=document.querySelector('main'),csrf=main.dataset.csrf;
  [].slice.call(document.querySelectorAll('button[data-supplier]')).forEach(function(b){
    b.addEventListener('click',function(){
      var q='tenant='+encodeURIComponent(b.dataset.tenant)+'&supplier='
            +encodeURIComponent(b.dataset.supplier)+'&field='+encodeURIComponent(b.dataset.field);
      b.disabled=true;
      fetch('/review/api/knowledge/forget?'+q,{method:'POST',credentials:'same-origin',
            headers:{'X-CSRF-Token':csrf}}).then(function(r){
        if(r.ok){var tr=b.closest('tr');tr.parentNode.removeChild(tr);}
        else{b.disabled=false;return r.json().then(function(e){alert(e.message||r.status);});}
      });
    });
  });
})();
)js";

constexpr const char* document_script = R"js(
(function(){
  var root=document.getElementById('review'),id=root.dataset.id,version=+root.dataset.version,
      csrf=root.dataset.csrf,next=root.dataset.next,status=document.getElementById('status'),timer=null;
  var inputs=[].slice.call(document.querySelectorAll('[data-field]'));
  // Where each value is on the pages, and the pages' words (the page-data block).
  var pd={};try{pd=JSON.parse(document.getElementById('page-data').textContent);}catch(e){}
  var where=pd.provenance||{},words=pd.words||[],mark=document.getElementById('mark'),focused=null;
  document.getElementById('fields').addEventListener('submit',function(e){e.preventDefault();});
  // Amounts and dates in the document's locale (data-locale; none: as stored), read back into
  // the stored form: numbers, and dates as YYYY-MM-DD.
  var loc=root.dataset.locale||'',dec='.',order=['year','month','day'],datePattern='yyyy-mm-dd';
  var amountFmt=loc?new Intl.NumberFormat(loc,{minimumFractionDigits:2,maximumFractionDigits:6}):null,
      plainFmt=loc?new Intl.NumberFormat(loc,{maximumFractionDigits:6}):null,
      moneyFmt=loc?new Intl.NumberFormat(loc,{minimumFractionDigits:2,maximumFractionDigits:2}):null,
      dateFmt=loc?new Intl.DateTimeFormat(loc,{year:'numeric',month:'2-digit',day:'2-digit',timeZone:'UTC'}):null;
  if(loc){
    amountFmt.formatToParts(1.5).forEach(function(p){if(p.type==='decimal')dec=p.value;});
    var parts=dateFmt.formatToParts(new Date(Date.UTC(2024,2,1)));
    order=parts.filter(function(p){return p.type!=='literal';}).map(function(p){return p.type;});
    datePattern=parts.map(function(p){return {day:'dd',month:'mm',year:'yyyy'}[p.type]||p.value;}).join('');
  }
  function parseNum(v){
    // Spaces and apostrophes only group digits. With both '.' and ',', the later one is the
    // decimal mark; one of them alone is, unless it repeats, or groups three digits and is not
    // the locale's decimal mark ("1.234" is 1234 in German, 1.234 in English).
    v=v.replace(/[\s\u00a0\u202f'\u2019]/g,'');
    var dot=v.lastIndexOf('.'),comma=v.lastIndexOf(','),mark='',whole=v,frac='';
    if(dot>=0&&comma>=0)mark=dot>comma?'.':',';
    else if(dot>=0||comma>=0){var s=dot>=0?'.':',';
      if(v.split(s).length===2&&!(s!==dec&&/^-?\d{1,3}[.,]\d{3}$/.test(v)))mark=s;}
    if(mark){whole=v.slice(0,v.lastIndexOf(mark));frac=v.slice(v.lastIndexOf(mark)+1);}
    if(!/^-?(\d+|\d{1,3}([.,]\d{3})+)$/.test(whole)||!/^\d*$/.test(frac))return NaN;
    return Number(whole.replace(/[.,]/g,'')+(frac?'.'+frac:''));
  }
  function showNum(n,plain){return n==null||n===''?'':loc&&typeof n==='number'?(plain?plainFmt:amountFmt).format(n):String(n);}
  function money(n){return loc?moneyFmt.format(n):n.toFixed(2);}
  function parseDate(v){
    if(/^\d{4}-\d{2}-\d{2}$/.test(v))return v;
    var p=v.split(/[^0-9]+/).filter(Boolean),o={};
    if(p.length!==3)return v;
    order.forEach(function(k,i){o[k]=+p[i];});
    if(o.year<100)o.year+=2000;
    var d=new Date(Date.UTC(o.year,o.month-1,o.day));
    if(isNaN(d)||d.getUTCFullYear()!==o.year||d.getUTCMonth()!==o.month-1||d.getUTCDate()!==o.day)return v;
    return d.toISOString().slice(0,10);
  }
  function showDate(v){return loc&&/^\d{4}-\d{2}-\d{2}$/.test(v)?dateFmt.format(new Date(v+'T00:00:00Z')):v;}
  inputs.forEach(function(el){
    var t=el.dataset.type,v=el.value.trim();
    if(t==='number'&&v!==''&&!isNaN(Number(v)))el.value=el.dataset.original=showNum(Number(v));
    else if(t==='date'){el.placeholder=datePattern;el.value=el.dataset.original=showDate(v);}
  });
  // A value typed in another form is shown in the locale's once the field is left.
  function tidy(el,kind){
    var v=el.value.trim();if(v==='')return;
    if(kind==='date'){var d=parseDate(v);if(/^\d{4}-\d{2}-\d{2}$/.test(d))el.value=showDate(d);}
    else{var n=parseNum(v);if(!isNaN(n))el.value=showNum(n,kind==='quantity');}
  }
  inputs.forEach(function(el){
    var t=el.dataset.type;
    if(t==='number'||t==='date')el.addEventListener('change',function(){tidy(el,t);
      el.parentNode.classList.toggle('changed',el.value!==el.dataset.original);});
  });
  function read(el){
    var v=el.value.trim();
    if(el.dataset.type==='number'){if(v==='')return null;var n=parseNum(v);return isNaN(n)?v:n;}
    if(el.dataset.type==='date')return v===''?null:parseDate(v);
    if(el.dataset.type==='json'){if(v==='')return [];try{return JSON.parse(v);}catch(e){return v;}}
    return v===''?null:v;
  }
  function changed(){
    var f={};
    inputs.forEach(function(el){if(el.value!==el.dataset.original)f[el.dataset.field]=read(el);});
    return f;
  }
  function say(text,cls){status.textContent=text;status.className=cls||'';}
  function post(action,body){
    return fetch('/review/api/documents/'+id+'/'+action,{method:'POST',credentials:'same-origin',
      headers:{'Content-Type':'application/json','X-CSRF-Token':csrf},body:JSON.stringify(body)})
      .then(function(r){return r.json().then(function(j){return {status:r.status,body:j};});});
  }
  function showWarnings(ws){
    document.querySelectorAll('.field .note').forEach(function(n){n.remove();});
    document.querySelectorAll('.field.flagged').forEach(function(n){n.classList.remove('flagged');});
    (ws||[]).forEach(function(w){(w.fields||[]).forEach(function(f){
      var box=document.querySelector('.field[data-name="'+f+'"]');if(!box)return;
      box.classList.add('flagged');var n=document.createElement('div');
      n.className='note';n.textContent=w.message;box.appendChild(n);});});
  }
  function check(){
    post('check',{fields:changed()}).then(function(r){
      if(r.status!==200){say(r.body.message||'check failed','error');return;}
      showWarnings(r.body.warnings);
      if(!r.body.valid)say('Not valid: '+r.body.schema_error,'error');
      else if(r.body.warnings.length)say(r.body.warnings.length+' plausibility warning(s): you may still approve','');
      else say('Valid','ok');
    });
  }
  // Line items: a table over the hidden JSON field. Rows are added, removed and moved; each
  // row's quantity x unit price and the lines' sum against the subtotal (the total when there
  // is neither subtotal nor VAT, as the gate does) are checked as they are typed.
  var li=document.getElementById('f-line_items'),lrows=document.getElementById('li-rows'),
      lsum=document.getElementById('li-sum'),cols=['description','quantity','unit_price','amount'];
  function rowData(tr){var o={};cols.forEach(function(c){
    var v=tr.querySelector('[data-col="'+c+'"]').value.trim();
    if(c==='description')o[c]=v===''?null:v;
    else if(v==='')o[c]=null;
    else{var n=parseNum(v);o[c]=isNaN(n)?v:n;}});return o;}
  function addRow(o,row){
    var tr=document.createElement('tr');
    cols.forEach(function(c){var td=document.createElement('td'),i=document.createElement('input');
      i.dataset.col=c;
      i.value=!o||o[c]==null?'':c==='description'?String(o[c]):showNum(o[c],c==='quantity');i.setAttribute('aria-label',c.replace('_',' '));
      if(c!=='description'){i.inputMode='decimal';i.className='num';}
      // Where the cell's value is on the page: it moves with its row.
      if(row!==undefined)i.onPage=where['line_items['+row+'].'+c];
      td.appendChild(i);tr.appendChild(td);});
    var td=document.createElement('td');td.className='acts';
    [['\u2191','Move up','up'],['\u2193','Move down','down'],['\u2715','Remove','remove']].forEach(function(b){
      var k=document.createElement('button');k.type='button';k.textContent=b[0];k.title=b[1];
      k.setAttribute('aria-label',b[1]);k.dataset.act=b[2];td.appendChild(k);});
    tr.appendChild(td);lrows.appendChild(tr);return tr;}
  function checkLines(){
    var sum=0,complete=true,n=lrows.rows.length;
    [].slice.call(lrows.rows).forEach(function(tr){
      var o=rowData(tr),bad='';
      cols.forEach(function(c){tr.querySelector('[data-col="'+c+'"]').classList.toggle('bad',
        c!=='description'&&typeof o[c]==='string');});
      if(typeof o.amount==='number')sum+=o.amount;else complete=false;
      if(typeof o.quantity==='number'&&typeof o.unit_price==='number'&&typeof o.amount==='number'
         &&Math.abs(o.quantity*o.unit_price-o.amount)>0.011)
        bad='quantity \u00d7 unit price is '+money(o.quantity*o.unit_price)+', not '+money(o.amount);
      tr.classList.toggle('rowbad',!!bad);tr.title=bad;});
    var sub=read(document.getElementById('f-subtotal')),vat=read(document.getElementById('f-vat_amount')),
        tot=read(document.getElementById('f-total')),target=null,what='subtotal',text,cls='';
    if(typeof sub==='number')target=sub;
    else if(vat===null&&typeof tot==='number'){target=tot;what='total';}
    if(!n)text='No lines';
    else if(!complete)text=n+(n===1?' line':' lines')+': an amount is missing';
    else{text=n+(n===1?' line':' lines')+', sum '+money(sum);
      if(target!==null){var agree=Math.abs(sum-target)<=0.02+0.01*n+1e-9;
        text+=(agree?' = ':' \u2260 ')+what+' '+money(target)+(agree?'':' ('+money(Math.abs(sum-target))+' apart)');
        cls=agree?'ok':'error';}}
    lsum.textContent=text;lsum.className=cls;}
  function sync(){li.value=JSON.stringify([].slice.call(lrows.rows).map(rowData));checkLines();
    li.dispatchEvent(new Event('input'));}
  if(li&&lrows){
    var items=null;
    try{items=JSON.parse(li.value||'[]');}catch(e){}
    // The same text as the table writes back, so that an edit undone is no change.
    if(Array.isArray(items))li.value=li.dataset.original=JSON.stringify(items);else items=[];
    items.forEach(function(o,row){addRow(o&&typeof o==='object'?o:null,row);});
    checkLines();
    lrows.addEventListener('input',sync);
    lrows.addEventListener('change',function(e){var c=e.target.dataset.col;
      if(c&&c!=='description')tidy(e.target,c);});
    lrows.addEventListener('click',function(e){
      var b=e.target.closest('button[data-act]');if(!b)return;
      var tr=b.closest('tr'),act=b.dataset.act;
      if(act==='remove'){var f=tr.nextElementSibling||tr.previousElementSibling;tr.remove();
        (f?f.querySelector('[data-act=remove]'):document.getElementById('li-add')).focus();}
      else if(act==='up'&&tr.previousElementSibling){lrows.insertBefore(tr,tr.previousElementSibling);b.focus();}
      else if(act==='down'&&tr.nextElementSibling){lrows.insertBefore(tr.nextElementSibling,tr);b.focus();}
      else return;
      sync();});
    document.getElementById('li-add').addEventListener('click',function(){
      addRow(null).querySelector('input').focus();sync();});
    ['f-subtotal','f-vat_amount','f-total'].forEach(function(i){
      var el=document.getElementById(i);if(el)el.addEventListener('input',checkLines);});
  }
  inputs.forEach(function(el){el.addEventListener('input',function(){
    el.parentNode.classList.toggle('changed',el.value!==el.dataset.original);
    clearTimeout(timer);timer=setTimeout(check,300);});});
  function done(r,what){
    if(r.status===200){say(what+' (version '+r.body.version+')','ok');
      setTimeout(function(){location.href=next?'/review/documents/'+next:'/review';},400);}
    else say((r.status===409?'Not saved: ':'Refused: ')+(r.body.message||r.status),'error');
  }
  function approve(){say('Saving…');post('approve',{version:version,fields:changed()}).then(function(r){done(r,'Approved');});}
  function reject(){var reason=document.getElementById('reason').value.trim();
    if(!reason){say('Give a reason to reject','error');document.getElementById('reason').focus();return;}
    post('reject',{version:version,reason:reason}).then(function(r){done(r,'Rejected');});}
  var rp=document.getElementById('reprocess-form');
  function reprocess(e){e.preventDefault();var body={version:version};
    [].slice.call(rp.querySelectorAll('select')).forEach(function(s){if(s.value)body[s.name]=s.value;});
    say('Sending…');post('reprocess',body).then(function(r){done(r,'Sent for reprocessing');});}
  document.getElementById('approve').addEventListener('click',approve);
  document.getElementById('reject').addEventListener('click',reject);
  rp.addEventListener('submit',reprocess);
  document.addEventListener('keydown',function(e){
    if(e.key==='Enter'&&(e.ctrlKey||e.metaKey)&&!e.target.matches('select')){approve();e.preventDefault();return;}
    if(e.key==='Escape'){document.activeElement.blur();return;}
    if(e.target.matches('input,textarea,select'))return;
    if(e.key==='a')approve();
    else if(e.key==='r'){document.getElementById('rp-transcription').focus();e.preventDefault();}
    else if(e.key==='n'&&next)location.href='/review/documents/'+next;
    else if(e.key==='q')location.href='/review';
    else if(e.key==='e'&&inputs.length){inputs[0].focus();e.preventDefault();}
  });
  var img=document.getElementById('pageimg'),page=0,pages=+root.dataset.pages;
  function show(n){page=Math.max(0,Math.min(pages-1,n));img.src='/review/api/documents/'+id+'/pages/'+page+'.png';
    document.getElementById('pageno').textContent=(page+1)+' / '+pages;outline(source());}
  // Where each value is on the page: a field with focus outlines its words on the page image
  // (turning to their page); a click on a word puts it in the field that had focus last, and
  // Shift+click adds it after a space.
  function outline(box){
    if(!box){mark.hidden=true;return;}
    mark.style.left=box[0]*100+'%';mark.style.top=box[1]*100+'%';
    mark.style.width=(box[2]-box[0])*100+'%';mark.style.height=(box[3]-box[1])*100+'%';mark.hidden=false;}
  function sourceOf(el){return el.onPage||where[el.dataset.field];}
  function source(){var s=focused&&sourceOf(focused);return s&&s.page-1===page?s.box:null;}
  function take(el){focused=el;var s=sourceOf(el);if(s&&s.page-1!==page)show(s.page-1);else outline(source());}
  inputs.forEach(function(el){if(el.dataset.type!=='json')el.addEventListener('focus',function(){take(el);});});
  if(lrows)lrows.addEventListener('focusin',function(e){if(e.target.dataset.col)take(e.target);});
  img.addEventListener('click',function(e){
    var r=img.getBoundingClientRect(),x=(e.clientX-r.left)/r.width,y=(e.clientY-r.top)/r.height,m=.003;
    var hit=(words[page]||[]).filter(function(w){return x>=w[1]-m&&x<=w[3]+m&&y>=w[2]-m&&y<=w[4]+m;})[0];
    if(!hit||!focused)return;
    var text=e.shiftKey&&focused.value.trim()?focused.value.trim()+' '+hit[0]:hit[0];
    focused.value=text;focused.dispatchEvent(new Event('input'));focused.dispatchEvent(new Event('change'));
    focused.onPage={page:page+1,box:[hit[1],hit[2],hit[3],hit[4]],text:text};
    outline(source());});
  document.getElementById('prev').addEventListener('click',function(){show(page-1);});
  document.getElementById('nextpage').addEventListener('click',function(){show(page+1);});
  var pre=document.getElementById('pre');
  if(pre)pre.addEventListener('click',function(){img.src='/review/api/documents/'+id+'/pages/0.png?variant=preprocessed';});
})();
)js";

/// A select of the reprocess form: "as configured" (the default), then every provider of `names`,
/// those this node cannot run disabled with what they need.
template <size_t N>
std::string provider_select(const char* id, const char* name, const char* label,
                            const std::string_view (&names)[N],
                            const std::vector<std::string>& here) {
  std::string out = std::string{"<label for=\""} + id + "\">" + label + "</label><select id=\"" + id
                    + "\" name=\"" + name + "\"><option value=\"\" selected>as configured";
  if (!here.empty())
    out += " (" + html_escape(here.front()) + " on this node)";
  out += "</option>";
  for (auto n : names) {
    bool runs = std::find(here.begin(), here.end(), n) != here.end();
    out += "<option value=\"" + html_escape(n) + "\"";
    if (!runs)
      out += " disabled title=\"needs " + html_escape(provider_requirement(n)) + "\"";
    out += ">" + html_escape(n) + (runs ? "" : " (not on this node)") + "</option>";
  }
  return out + "</select>";
}

} // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out.push_back(c);
    }
  }
  return out;
}

namespace {

/// "'sha256-BASE64'" of `text`, a CSP source for an inline script or style.
std::string csp_hash(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  std::array<unsigned char, 4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1> b64{};
  int n = EVP_EncodeBlock(b64.data(), digest.data(), static_cast<int>(digest.size()));
  return "'sha256-" + std::string{reinterpret_cast<const char*>(b64.data()), static_cast<size_t>(n)}
         + "'";
}

} // namespace

const std::string& content_security_policy() {
  static const std::string policy
      = "default-src 'none'; script-src " + csp_hash(queue_script) + " " + csp_hash(document_script)
        + " " + csp_hash(knowledge_script) + "; style-src " + csp_hash(style)
        + "; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
          "base-uri 'none'";
  return policy;
}

std::string knowledge_page(const page_context& ctx, const std::vector<learned_fact>& facts) {
  std::string out = head("Learned") + top_bar(ctx) + "<main data-csrf=\"" + html_escape(ctx.csrf)
                    + "\"><h1>Learned from reviews</h1><p class=\"muted\">What reviewers' "
                      "corrections taught about each supplier, applied to its next documents "
                      "when review.learn is on. A supplier is named as the machine reads it.</p>";
  if (facts.empty())
    return out + "<p>Nothing learned yet.</p></main></body></html>";
  out += "<table class=\"queue\"><thead><tr>";
  if (ctx.tenants.size() > 1)
    out += "<th>Tenant</th>";
  out += "<th>Supplier</th><th>Field</th><th>Value</th><th>Learned from</th><th>Last by</th>"
         "<th></th></tr></thead><tbody>";
  for (auto& f : facts) {
    out += "<tr>";
    if (ctx.tenants.size() > 1)
      out += "<td>" + f.tenant_id.str() + "</td>";
    auto value = f.fact.field == "date_order"             ? std::string{"day and month swapped"}
                 : f.fact.field == "invoice_number_label" ? "the value after '" + f.fact.value + "'"
                 : f.fact.field == "decimal_separator"
                     ? "'" + f.fact.value + "' before three digits is the decimal point"
                     : f.fact.value;
    out += "<td>" + html_escape(f.fact.supplier) + "</td><td>" + html_escape(f.fact.field)
           + "</td><td>" + html_escape(value) + "</td><td>" + std::to_string(f.fact.reviews)
           + (f.fact.reviews == 1 ? " review" : " reviews") + "</td><td>"
           + html_escape(f.learned_by) + " " + html_escape(f.learned_at)
           + " UTC</td><td><button data-tenant=\"" + f.tenant_id.str() + "\" data-supplier=\""
           + html_escape(f.fact.supplier) + "\" data-field=\"" + html_escape(f.fact.field)
           + "\">Forget</button></td></tr>";
  }
  return out + "</tbody></table></main><script>" + std::string{knowledge_script}
         + "</script></body></html>";
}

std::string login_page(std::string_view error, bool open) {
  std::string out = head("Sign in");
  out += "<main><div class=\"pane login\"><h1>Review desk</h1>";
  if (!error.empty())
    out += "<p class=\"error\">" + html_escape(error) + "</p>";
  out += "<form method=\"post\" action=\"/review/login\"><div class=\"field\"><label "
         "for=\"name\">Your name"
         "</label><input id=\"name\" name=\"name\" autocomplete=\"username\" required "
         "autofocus></div>";
  if (!open)
    out += "<div class=\"field\"><label for=\"token\">Access token (INGESTD_REVIEW_TOKEN)</label>"
           "<input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" "
           "required></div>";
  out += "<button class=\"primary\" id=\"signin\">Sign "
         "in</button></form></div></main></body></html>";
  return out;
}

std::string queue_page(const page_context& ctx, const review_queue& queue,
                       const review_queue_filter& filter, const std::string& tenant_filter) {
  std::string out = head("Queue") + top_bar(ctx) + "<main>";
  int64_t total = 0;
  for (auto& [k, n] : queue.counts)
    total += n;
  out += "<p class=\"counts\"><span><strong>" + std::to_string(total)
         + "</strong> need review</span>";
  for (auto reason : review_reasons) {
    int64_t n = 0;
    for (auto& [k, v] : queue.counts)
      if (k == reason)
        n = v;
    out += "<span><a href=\"/review?reason=" + std::string{reason} + "\">" + std::string{reason}
           + "</a>: " + std::to_string(n) + "</span>";
  }
  out += "<span class=\"muted\">being reprocessed: " + std::to_string(queue.processing)
         + "</span></p>";
  out += "<form method=\"get\" action=\"/review\">Reason <select name=\"reason\"><option "
         "value=\"\">any</option>";
  for (auto reason : review_reasons)
    out += "<option" + std::string{filter.reason == reason ? " selected" : ""} + ">"
           + std::string{reason} + "</option>";
  out += "</select>";
  if (ctx.tenants.size() > 1) {
    out += " Tenant <select name=\"tenant\"><option value=\"\">all</option>";
    for (auto& t : ctx.tenants)
      out += "<option" + std::string{tenant_filter == t.str() ? " selected" : ""} + ">" + t.str()
             + "</option>";
    out += "</select>";
  }
  out += " <button>Filter</button> <span class=\"muted\">Keys: <kbd>j</kbd>/<kbd>k</kbd> move, "
         "<kbd>Enter</kbd> open</span></form><p></p>";
  if (queue.items.empty()) {
    out += "<p class=\"pane\">Nothing needs review. </p>";
  } else {
    out += "<table id=\"queue\"><tr><th>Age</th><th>File</th><th>Why</th><th>Supplier</th>"
           "<th>Total</th>";
    if (ctx.tenants.size() > 1)
      out += "<th>Tenant</th>";
    out += "</tr>";
    for (auto& it : queue.items) {
      auto href = "/review/documents/" + it.document_id.str();
      out.append("<tr data-href=\"")
          .append(href)
          .append("\"><td>")
          .append(age_text(it.age_seconds));
      out.append("</td><td><a href=\"")
          .append(href)
          .append("\">")
          .append(html_escape(it.file_name));
      out.append("</a></td><td><span class=\"tag ").append(html_escape(it.reason)).append("\">");
      out.append(html_escape(it.reason)).append("</span> ").append(html_escape(it.detail));
      out.append("</td><td>").append(html_escape(it.supplier)).append("</td><td>");
      out.append(html_escape(it.total))
          .append(" ")
          .append(html_escape(it.currency))
          .append("</td>");
      if (ctx.tenants.size() > 1)
        out += "<td class=\"muted\">" + it.tenant_id.str().substr(0, 8) + "…</td>";
      out += "</tr>";
    }
    out += "</table>";
  }
  out += "</main><script>" + std::string{queue_script} + "</script></body></html>";
  return out;
}

namespace {

/// The document page's data for its script, in a JSON data block: where each field's value is
/// ("provenance") and each page's words as [text, left, top, right, bottom] ("words"). "</" is
/// written "<\/" so that no text ends the block.
std::string page_data(const std::string& structured_data, const transcription& reading) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  w.Key("provenance");
  auto sources = to_json(locate_fields(structured_data, reading));
  w.RawValue(sources.data(), sources.size(), rapidjson::kObjectType);
  w.Key("words");
  w.StartArray();
  for (const auto& page : reading.pages) {
    auto words = to_json(page.words);
    w.RawValue(words.data(), words.size(), rapidjson::kArrayType);
  }
  w.EndArray();
  w.EndObject();
  std::string out{buf.GetString(), buf.GetSize()};
  for (size_t at = out.find("</"); at != std::string::npos; at = out.find("</", at + 3))
    out.replace(at, 2, "<\\/");
  return out;
}

} // namespace

std::string document_locale(std::string_view transcription, std::string_view currency) {
  static const std::vector<std::string> languages{"eng", "deu", "fra", "nld", "spa", "ita", "pol"};
  auto language = guess_language(transcription, languages);
  if (language == "eng")
    return currency == "USD"   ? "en-US"
           : currency == "CAD" ? "en-CA"
           : currency == "AUD" ? "en-AU"
                               : "en-GB";
  if (language == "deu")
    return currency == "CHF" ? "de-CH" : "de-DE";
  if (language == "fra")
    return currency == "CHF" ? "fr-CH" : currency == "CAD" ? "fr-CA" : "fr-FR";
  if (language == "ita")
    return currency == "CHF" ? "it-CH" : "it-IT";
  if (language == "nld")
    return "nl-NL";
  if (language == "spa")
    return "es-ES";
  if (language == "pol")
    return "pl-PL";
  return "";
}

namespace {

/// What review.learn changed in the latest ingestion's extraction, per field: its audit step
/// "learned" (applied) as learned_fields reads it.
std::vector<std::pair<std::string, std::string>> learned_notes(const review_document& d) {
  std::vector<std::pair<std::string, std::string>> out;
  rapidjson::Document events;
  events.Parse(d.events_json.data(), d.events_json.size());
  if (events.HasParseError() || !events.IsArray() || !d.latest_ingestion_id)
    return out;
  auto latest = d.latest_ingestion_id->str();
  auto text = [](const rapidjson::Value& e, const char* name) {
    auto it = e.FindMember(name);
    return it != e.MemberEnd() && it->value.IsString()
               ? std::string_view{it->value.GetString(), it->value.GetStringLength()}
               : std::string_view{};
  };
  for (auto& e : events.GetArray())
    if (e.IsObject() && text(e, "ingestion_id") == latest && text(e, "step") == "learned"
        && text(e, "outcome") == "applied")
      out = learned_fields(text(e, "detail"));
  return out;
}

} // namespace

std::string document_page(const page_context& ctx, const document_view& view) {
  auto& d = *view.doc;
  rapidjson::Document data;
  data.Parse(d.structured_data.data(), d.structured_data.size());
  if (data.HasParseError() || !data.IsObject())
    data.SetObject();
  rapidjson::Document machine;
  machine.Parse(d.machine_data.data(), d.machine_data.size());
  if (machine.HasParseError() || !machine.IsObject())
    machine.SetObject();

  auto learned = learned_notes(d);
  std::string out = head(d.file_name) + top_bar(ctx);
  auto currency = data.FindMember("currency");
  int page_count = std::max<int>(1, static_cast<int>(view.reading.pages.size()));
  auto locale = document_locale(view.reading.text,
                                currency != data.MemberEnd() && currency->value.IsString()
                                    ? currency->value.GetString()
                                    : "");
  out += "<main id=\"review\" data-locale=\"" + html_escape(locale) + "\" data-id=\"" + d.id.str()
         + "\" data-version=\"" + std::to_string(d.version) + "\" data-csrf=\""
         + html_escape(ctx.csrf) + "\" data-next=\"" + html_escape(view.next_id)
         + "\" data-pages=\"" + std::to_string(page_count) + "\">";
  out += "<h2>" + html_escape(d.file_name) + " <span class=\"muted\">version "
         + std::to_string(d.version) + "</span></h2>";
  rapidjson::Document metadata;
  metadata.Parse(d.metadata_json.data(), d.metadata_json.size());
  if (!metadata.HasParseError() && metadata.IsObject() && metadata.MemberCount() > 0) {
    // The submitter's own fields (a load file's columns).
    out += "<table class=\"metadata\">";
    for (const auto& m : metadata.GetObject())
      if (m.value.IsString())
        out += "<tr><th>" + html_escape(m.name.GetString()) + "</th><td>"
               + html_escape(m.value.GetString()) + "</td></tr>";
    out += "</table>";
  }
  if (d.processing)
    out += "<p class=\"error\">An ingestion of this document is in progress: wait for it to "
           "finish.</p>";
  if (!d.review_status.empty())
    out += "<p class=\"ok\">" + html_escape(d.review_status) + " by " + html_escape(d.reviewed_by)
           + "</p>";
  out += "<div class=\"doc\"><div><div class=\"pane\"><div><button id=\"prev\" "
         "type=\"button\">◀</button>"
         "<span id=\"pageno\">1 / "
         + std::to_string(page_count)
         + "</span> <button id=\"nextpage\" type=\"button\">▶</button>";
  // (An office document's preprocessed file is the PDF its pages are shown from.)
  if (!d.preprocessed_file_path.empty() && !d.preprocessed_file_path.ends_with(".pdf"))
    out += " <button id=\"pre\" type=\"button\">preprocessed scan</button>";
  out += "</div><div class=\"pagebox\"><img id=\"pageimg\" class=\"pageimg\" alt=\"page image\" "
         "src=\"/review/api/documents/"
         + d.id.str() + "/pages/0.png\"><div id=\"mark\" class=\"mark\" hidden></div></div></div>";
  out += "<div class=\"pane\"><h3>Transcription</h3><pre id=\"transcription\">"
         + html_escape(view.reading.text.empty() ? "(none)" : view.reading.text)
         + "</pre></div></div>";

  // The form: each field with the current value, the machine's when it differs, the failed
  // checks that concern it.
  out += std::string{"<div><div class=\"pane\"><h3>"}
         + (d.needs_human_review ? "Why it needs review" : "Checks on the current data") + "</h3>";
  if (!d.last_error.empty())
    out += "<p>" + html_escape(d.last_error) + "</p>";
  if (view.findings.empty()) {
    out += "<p class=\"muted\">No failed checks on the current data.</p>";
  } else {
    out += "<ul class=\"checks\">";
    for (auto& f : view.findings)
      out += "<li><strong>" + html_escape(f.check) + "</strong>: " + html_escape(f.message)
             + "</li>";
    out += "</ul>";
  }
  out += "</div><div class=\"pane\"><form id=\"fields\">";
  for (auto& f : fields) {
    auto it = data.FindMember(f.name);
    std::string value = it == data.MemberEnd() ? "" : input_text(it->value);
    auto m = machine.FindMember(f.name);
    std::string machine_value = m == machine.MemberEnd() ? "" : input_text(m->value);
    std::string notes;
    for (auto& finding : view.findings)
      for (auto& name : finding.fields)
        if (name == f.name)
          notes += "<div class=\"note\">" + html_escape(finding.message) + "</div>";
    out += "<div class=\"field" + std::string{notes.empty() ? "" : " flagged"} + "\" data-name=\""
           + f.name + "\"><label for=\"f-" + f.name + "\">" + f.label + "</label>";
    std::string attrs = "id=\"f-" + std::string{f.name} + "\" data-field=\"" + f.name
                        + "\" data-type=\"" + f.type + "\" data-original=\"" + html_escape(value)
                        + "\"";
    if (std::string_view{f.type} == "json")
      // The JSON is what is sent; the page's script edits it as a table of lines.
      out += "<textarea hidden " + attrs + ">" + html_escape(value)
             + "</textarea><table class=\"lines\"><thead><tr><th>Description</th>"
               "<th>Quantity</th><th>Unit price</th><th>Amount</th><th></th></tr></thead>"
               "<tbody id=\"li-rows\"></tbody></table><button id=\"li-add\" type=\"button\">"
               "Add line</button> <span id=\"li-sum\" role=\"status\"></span>";
    else
      out += "<input " + attrs + " value=\"" + html_escape(value) + "\">";
    if (machine_value != value)
      out += "<div class=\"machine\">machine: "
             + html_escape(machine_value.empty() ? "(empty)" : machine_value) + "</div>";
    // What review.learn changed here, without the field's name that begins the audit's words.
    for (auto& [field, note] : learned)
      if (field == f.name)
        out += "<div class=\"learned\">Learned: "
               + html_escape(std::string_view{note}.substr(field.size() + 1)) + "</div>";
    out += notes + "</div>";
  }
  out += "</form>";
  if (!locale.empty())
    out += "<p class=\"muted\" id=\"locale\">Amounts and dates as the document writes them ("
           + html_escape(locale) + "); they are saved as 1234.56 and 2024-03-01.</p>";
  out += "<p id=\"status\" role=\"status\"></p>"
         "<button class=\"primary\" id=\"approve\" type=\"button\">Approve</button>"
         "<form id=\"reprocess-form\"><fieldset><legend>Reprocess: a new ingestion</legend>"
         + provider_select("rp-transcription", "transcription_provider", "Transcription",
                           transcription_provider_names, view.providers.transcription)
         + provider_select("rp-extraction", "extraction_provider", "Extraction",
                           extraction_provider_names, view.providers.extraction)
         + "<button id=\"reprocess\" type=\"submit\">Reprocess</button></fieldset></form>"
           "<div class=\"field\"><label for=\"reason\">Reason to reject</label><input "
           "id=\"reason\"></div>"
           "<button id=\"reject\" type=\"button\">Reject</button>"
           "<p class=\"muted\">Keys: <kbd>a</kbd> or <kbd>Ctrl</kbd>+<kbd>Enter</kbd> approve, "
           "<kbd>e</kbd> edit, "
           "<kbd>r</kbd> reprocess, <kbd>Esc</kbd> leave a field, <kbd>n</kbd> next document, "
           "<kbd>q</kbd> queue</p>";
  if (!view.next_id.empty())
    out += "<p><a id=\"next\" href=\"/review/documents/" + html_escape(view.next_id)
           + "\">Next document →</a></p>";
  out += "</div>";
  out += "<div class=\"pane\"><h3>Matches</h3>"
         + json_table(d.matches_json,
                      {{"document_id", "Document"},
                       {"file_name", "File"},
                       {"kind", "Kind"},
                       {"confidence", "Confidence"},
                       {"reason", "Why"}},
                      "No matches.");
  out += "<h3>Cluster</h3>"
         + json_table(d.cluster_json, {{"document_id", "Document"}, {"file_name", "File"}},
                      "Not in a cluster with other documents.")
         + "</div>";
  out += "<div class=\"pane\"><h3>Reviews</h3>"
         + json_table(d.reviews_json,
                      {{"at", "When"},
                       {"reviewer", "Who"},
                       {"action", "Action"},
                       {"changes", "Changes"},
                       {"reason", "Reason"}},
                      "No earlier reviews.")
         + "</div></div></div>";
  out += "<div class=\"pane\"><h3>Audit trail</h3>"
         + json_table(d.events_json,
                      {{"at", "When"},
                       {"step", "Step"},
                       {"outcome", "Outcome"},
                       {"detail", "Detail"},
                       {"duration_ms", "ms"},
                       {"worker_id", "Worker"}},
                      "No events.")
         + "</div>";
  out += "</main><script type=\"application/json\" id=\"page-data\">"
         + page_data(d.structured_data, view.reading) + "</script><script>"
         + std::string{document_script} + "</script></body></html>";
  return out;
}

} // namespace ingestd
